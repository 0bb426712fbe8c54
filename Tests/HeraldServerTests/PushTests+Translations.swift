import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import HeraldServer

/// Translated templates end to end: each recipient's collection and alert push are in the variant of
/// their locale, with fallback to the base language and then to the template's own content, for a
/// send to targets (one with their own variables), to everyone and to a topic.
extension PushTests {
    /// Users by locale; `none` has none.
    static let locales: [String: String?] = [
        "en": "en-US", "de": "de", "at": "de-AT", "br": "pt-BR", "pt": "pt-PT", "fr": "fr", "none": nil,
    ]

    static let translatedTemplate = #"""
        {"name": "Greeting", "variables": [{"name": "name", "type": "string", "required": true}],
         "data": {"title": "Hello {{name}}"}, "push_title": "News", "push_body": "{{name}} says hi",
         "actions": [{"id": "ack", "label": "OK"}],
         "variants": {
           "de": {"data": {"title": "Hallo {{name}}"}, "push_title": "Neuigkeiten", "push_body": "{{name}} grüßt",
                  "actions": [{"id": "ack", "label": "Verstanden"}]},
           "pt": {"push_title": "Novidades", "push_body": "{{name}} diz oi"},
           "pt-BR": {"data": {"title": "Olá {{name}}"}, "push_body": "{{name}} manda oi"}
         }}
        """#

    /// What each user should see of a send with `name`: the data's title, the alert's title and
    /// body, the action's label.
    static func expected(_ user: String, name: String) -> [String] {
        switch user {
        case "de", "at": return ["Hallo \(name)", "Neuigkeiten", "\(name) grüßt", "Verstanden"]
        // pt-BR's own data and body, its base language's title.
        case "br": return ["Olá \(name)", "Novidades", "\(name) manda oi", "OK"]
        // pt-PT falls back to pt: the template's data, pt's title and body.
        case "pt": return ["Hello \(name)", "Novidades", "\(name) diz oi", "OK"]
        default: return ["Hello \(name)", "News", "\(name) says hi", "OK"]
        }
    }

    @Test func translatedTemplatesReachEachUserInTheirLocaleWithFallbacks() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let users = Self.locales.keys.sorted()
            let world = try await world(
                db,
                users: users,
                devices: Dictionary(uniqueKeysWithValues: users.enumerated().map { ($1, [Self.token($0)]) })
            )
            defer { Task { await world.shutdown() } }
            try await world.app().test(.router) { client in
                func call(
                    _ method: HTTPRequest.Method,
                    _ uri: String,
                    _ body: String? = nil,
                    headers: HTTPFields? = nil
                ) async throws -> [String: Any] {
                    let response = try await client.execute(
                        uri: uri,
                        method: method,
                        headers: headers ?? jsonHeaders(bearer: Self.adminToken),
                        body: body.map { ByteBuffer(string: $0) }
                    )
                    #expect((200..<300).contains(response.status.code), "\(method) \(uri): \(String(buffer: response.body))")
                    return try jsonObject(response)
                }
                for (user, locale) in Self.locales {
                    _ = try await call(.put, "/v1/users/\(user)", locale.map { #"{"locale":"\#($0)"}"# } ?? "{}")
                }
                let stored = try await call(.put, "/v1/templates/greeting", Self.translatedTemplate)
                #expect((stored["variants"] as? [String: Any])?.keys.sorted() == ["de", "pt", "pt-BR"])

                /// Every user's newest notification and its alert, checked against `expected`.
                func check(_ id: String, name: String, reaching: [String]) async throws {
                    try await world.drain()
                    for user in reaching {
                        let collection = try await call(
                            .get,
                            "/v1/me/channels/feed/collection",
                            headers: jsonHeaders(bearer: world.sessions[user])
                        )
                        let item = try #require((collection["notifications"] as? [[String: Any]])?.first { $0["id"] as? String == id }, "\(user)")
                        let alert = try #require(
                            alerts(world).last { request in
                                request.deviceToken == Self.token(users.firstIndex(of: user)!)
                                    && (try? payload(request)["herald"] as? [String: Any])?["message_id"] as? Int == Int(id)
                            },
                            "\(user) has no alert"
                        )
                        let aps = try #require(try payload(alert)["aps"] as? [String: Any])
                        let text = try #require(aps["alert"] as? [String: String])
                        let seen = [
                            (item["data"] as? [String: Any])?["title"] as? String ?? "", text["title"] ?? "", text["body"] ?? "",
                            (item["actions"] as? [[String: Any]])?.first?["label"] as? String ?? "",
                        ]
                        #expect(seen == Self.expected(user, name: name), "\(user) (\(Self.locales[user]! ?? "no locale"))")
                    }
                }

                // To targets: `br` with variables of their own, rendered in their variant.
                let targeted = try await call(
                    .post,
                    "/v1/notifications",
                    #"""
                    {"channel_url": "feed", "template_key": "greeting", "targets": \#(try String(decoding: JSONSerialization.data(withJSONObject: users), as: UTF8.self)),
                     "variables": {"name": "Ana"}, "user_variables": {"br": {"name": "Bia"}}, "push": {"alert": true}}
                    """#
                )
                let variants = try #require(targeted["variants"] as? [String: [String: Any]])
                #expect(variants.keys.sorted() == ["de", "pt", "pt-br"])
                #expect((variants["de"]?["data"] as? [String: Any])?["title"] as? String == "Hallo Ana")
                try await check(targeted["id"] as! String, name: "Ana", reaching: users.filter { $0 != "br" })
                try await check(targeted["id"] as! String, name: "Bia", reaching: ["br"])

                // To everyone, reached by the fan-out in batches of two.
                let broadcast = try await call(
                    .post,
                    "/v1/notifications",
                    #"{"channel_url": "feed", "template_key": "greeting", "audience": "all", "variables": {"name": "Eva"}, "push": {"alert": true}}"#
                )
                while try await NotificationStore(client: db.client).fanOutNextBatch(size: 2) != nil {}
                try await check(broadcast["id"] as! String, name: "Eva", reaching: users)

                // To a topic's subscribers, whose copies are read with their users' locales.
                _ = try await call(.put, "/v1/topics/team", #"{"name": "Team"}"#)
                _ = try await call(.post, "/v1/topics/team/subscribers", #"{"user_ids": ["at", "br", "pt", "none"]}"#)
                let topical = try await call(
                    .post,
                    "/v1/notifications",
                    #"{"channel_url": "feed", "template_key": "greeting", "topic": "team", "variables": {"name": "Ida"}, "push": {"alert": true}}"#
                )
                while try await NotificationStore(client: db.client).fanOutNextBatch(size: 3) != nil {}
                try await check(topical["id"] as! String, name: "Ida", reaching: ["at", "br", "pt", "none"])

                // An edit renders every variant again; copies keep theirs.
                let topicalID = topical["id"] as! String
                _ = try await call(.patch, "/v1/notifications/\(topicalID)", #"{"variables": {"name": "Ivo"}}"#)
                let atCollection = try await call(.get, "/v1/me/channels/feed/collection", headers: jsonHeaders(bearer: world.sessions["at"]))
                let edited = (atCollection["notifications"] as? [[String: Any]])?.first { $0["id"] as? String == topicalID }
                #expect((edited?["data"] as? [String: Any])?["title"] as? String == "Hallo Ivo")
            }
        }
    }
}
