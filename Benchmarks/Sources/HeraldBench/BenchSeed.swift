import ArgumentParser
import HeraldCore
import HeraldStore
import Postgres

/// Seeding shared by the cases that write many typical notifications in bulk.
enum BenchSeed {
    /// The channel `feed` (key 1) and the template `plain`: a title, a sentence and a link.
    static func feedAndPlainTemplate(_ client: PostgresClient) async throws {
        _ = try await ChannelStore(client: client).put(Channel(url: "feed", kind: .feed, name: "Feed"))
        _ = try await TemplateStore(client: client).put(
            Template(
                key: "plain",
                name: "Plain",
                variables: [
                    .init(name: "title", type: .string, required: true), .init(name: "body", type: .string), .init(name: "url", type: .string),
                ],
                data: .object(["title": .string("{{title}}"), "body": .string("{{body}}"), "url": .string("{{url}}")])
            )
        )
    }

    /// Users `bench-1` … `bench-<count>`, each with a session a day long; returns their session
    /// tokens in that order.
    static func usersWithSessions(_ client: PostgresClient, count: Int) async throws -> [String] {
        try await client.query("INSERT INTO users (id) SELECT 'bench-' || i FROM generate_series(1, \(count)) AS i")
        var sessions: [String] = []
        for index in 1...count {
            guard let session = try await SessionStore(client: client).create(userID: "bench-\(index)", lifetime: 86_400) else {
                throw ValidationError("no user bench-\(index)")
            }
            sessions.append(session.token.text)
        }
        return sessions
    }

    /// `INSERT INTO notifications` of `count` typical notifications of `plain` in a channel (`feed`,
    /// the first, by default), each to one user: a select list over `generate_series(1, count) AS g`.
    static func notificationsInsert(count: Int, channelKey: Int64 = 1) -> PostgresQuery {
        """
        INSERT INTO notifications (channel_key, template_key, template_version, data, audience, audience_size, recipient_count)
        SELECT \(channelKey), 'plain', 1, jsonb_build_object('title', 'Order ' || g || ' has shipped',
            'body', 'Your parcel is on its way and should arrive within two working days.', 'url', 'https://example.com/orders/' || g),
            'targets', 1, 1
        FROM generate_series(1, \(count)) AS g
        """
    }
}
