import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres

#if canImport(Glibc)
import Glibc
#endif

extension CurvesBenchmark {
    /// Notifications of the user whose requests curve (3) measures, and of each other user.
    static let fixedNotifications = 1_000
    static let otherUsersNotifications = 1_000
    /// Notifications in each channel of the users of curve (4).
    static let perChannelNotifications = 10

    // MARK: - (3) copies in the whole table

    /// One user with `fixedNotifications`, made first (their copies are the oldest), and a table that
    /// grows around them: other users with `otherUsersNotifications` copies each, added a thousand
    /// users to a transaction, up to each of `targets` copies in all; at each, the user's requests.
    /// One `herald serve` throughout, so its statements' plans were made when the table was small.
    func tableCurve(_ database: BenchDatabase, copies targets: [Int]) async throws -> [String] {
        var rows: [String] = []
        try await database.withFreshHeraldDatabase("herald_curves_bench", connections: 2) { client, http, conninfo, _ in
            try await BenchSeed.feedAndPlainTemplate(client)
            let session = try await Self.seedUser(client, "user-fixed", notifications: Self.fixedNotifications)
            let (firstID, lastID) = try await client.query(
                "WITH sent AS (\(BenchSeed.notificationsInsert(count: Self.otherUsersNotifications)) RETURNING id) SELECT min(id), max(id) FROM sent"
            )[0].decode((Int64, Int64).self)
            try await client.query("VACUUM ANALYZE")
            let title =
                "(3) one user's requests (\(Self.fixedNotifications) notifications) against the copies in the whole table, \(requests) of each:"
            try await withServer(client, conninfo: conninfo, title: title, sizes: "copies in the table") { server, meter in
                var copies = Self.fixedNotifications
                var users = 0
                let clock = ContinuousClock()
                for target in targets {
                    let start = clock.now
                    while copies < target {
                        let added = min(1_000, (target - copies + Self.otherUsersNotifications - 1) / Self.otherUsersNotifications)
                        try await client.withTransaction { connection in
                            let xid = try await connection.query("SELECT pg_current_xact_id()::text::bigint")[0].decode(Int64.self)
                            let (low, high) = try await connection.query(
                                """
                                WITH made AS (INSERT INTO users (id) SELECT 'other-' || g FROM generate_series(\(users + 1), \(users + added)) AS g RETURNING key)
                                SELECT min(key), max(key) FROM made
                                """
                            )[0].decode((Int64, Int64).self)
                            try await connection.query(
                                """
                                INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid)
                                SELECT u, 1, n, \(xid) FROM generate_series(\(low), \(high)) AS u CROSS JOIN generate_series(\(firstID), \(lastID)) AS n
                                """
                            )
                            try await connection.query(
                                """
                                INSERT INTO channel_states (user_key, channel_key, unread_adjustment, last_notification_id)
                                SELECT u, 1, \(Self.otherUsersNotifications), \(lastID) FROM generate_series(\(low), \(high)) AS u
                                """
                            )
                        }
                        users += added
                        copies += added * Self.otherUsersNotifications
                    }
                    try await client.query("VACUUM ANALYZE notification_recipients")
                    try await client.query("CHECKPOINT")
                    let bytes = try await client.query("SELECT pg_total_relation_size('notification_recipients')")[0].decode(Int64.self)
                    print(
                        "| \(copies) | (table with indexes: \(bytes >> 20) MB, grown in \(format(elapsedSeconds(clock.now - start), digits: 0)) s) | | | | |"
                    )
                    rows += try await measureFeed(http, port: server.port, session: session, meter: meter, curve: "table", size: copies)
                }
            }
        }
        return rows
    }

    // MARK: - (4) channels per user

    /// One user per count with that many feed channels, `perChannelNotifications` unread in each:
    /// the channel list, its change log when nothing changed, the unread count, and a quiet poll of
    /// one channel.
    func channelsCurve(_ database: BenchDatabase, counts: [Int]) async throws -> [String] {
        var rows: [String] = []
        try await database.withFreshHeraldDatabase("herald_curves_bench", connections: 2) { client, http, conninfo, _ in
            try await BenchSeed.feedAndPlainTemplate(client)
            let channelStore = ChannelStore(client: client)
            for index in 1...(counts.max() ?? 0) {
                _ = try await channelStore.put(Channel(url: "channel-\(index)", kind: .feed, name: "Channel \(index)"))
            }
            var sessions: [Int: String] = [:]
            for count in counts {
                let user = "user-channels-\(count)"
                try await client.withTransaction { connection in
                    let xid = try await connection.query("SELECT pg_current_xact_id()::text::bigint")[0].decode(Int64.self)
                    let key = try await connection.query("INSERT INTO users (id) VALUES (\(user)) RETURNING key")[0].decode(Int64.self)
                    try await connection.query(
                        """
                        WITH chosen AS (SELECT key FROM channels WHERE url LIKE 'channel-%' ORDER BY key LIMIT \(count)),
                        sent AS (
                            INSERT INTO notifications (channel_key, template_key, template_version, data, audience, audience_size, recipient_count)
                            SELECT c.key, 'plain', 1, jsonb_build_object('title', 'Update ' || g), 'targets', 1, 1
                            FROM chosen AS c CROSS JOIN generate_series(1, \(Self.perChannelNotifications)) AS g
                            RETURNING id, channel_key
                        )
                        INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid)
                        SELECT \(key), channel_key, id, \(xid) FROM sent
                        """
                    )
                    try await connection.query(
                        """
                        INSERT INTO channel_states (user_key, channel_key, unread_adjustment, last_notification_id)
                        SELECT \(key), channel_key, count(*), max(notification_id) FROM notification_recipients
                        WHERE user_key = \(key) GROUP BY channel_key
                        """
                    )
                }
                sessions[count] = try await SessionStore(client: client).create(userID: user, lifetime: 86_400)?.token.text
            }
            try await client.query("VACUUM ANALYZE")
            try await client.query("CHECKPOINT")
            let title = "(4) one user's requests against the channels they have, \(requests) of each:"
            try await withServer(client, conninfo: conninfo, title: title, sizes: "channels") { server, meter in
                for count in counts {
                    guard let session = sessions[count] else { throw ValidationError("no session for the user of \(count) channels") }
                    let base = "http://127.0.0.1:\(server.port)/v1/me"
                    let list = try await Self.get(http, base + "/channels", session: session)
                    let listed = ((list["chat"] as? [Any])?.count ?? 0) + ((list["feed"] as? [Any])?.count ?? 0)
                    guard listed == count, let listToken = list["next_token"] as? String else {
                        throw ValidationError("the channel list held \(listed) channels for a user of \(count), or no next_token")
                    }
                    let first = try await Self.get(http, base + "/channels/channel-1/collection", session: session)
                    guard let pollToken = first["next_token"] as? String else { throw ValidationError("the first load named no next_token") }
                    rows += try await measureKinds(
                        http,
                        base: base,
                        session: session,
                        meter: meter,
                        curve: "channels",
                        size: count,
                        kinds: [
                            ("channel list", "/channels"),
                            ("list change log", "/channels?token=\(listToken)"),
                            ("unread", "/unread"),
                            ("quiet poll", "/channels/channel-1/collection?token=\(pollToken)"),
                        ]
                    )
                }
            }
        }
        return rows
    }
}
