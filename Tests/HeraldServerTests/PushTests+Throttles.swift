import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Testing

@testable import HeraldServer

/// Throttles end to end: a channel's cap silences the alerts beyond it and lets them through again
/// once the window has passed (the test moves the earlier notifications back in time: the clock it
/// controls), counts per category when asked, and a send's throttle that drops keeps the copies
/// from users at the cap — listed and broadcast — with the counts, events and webhooks that say so.
extension PushTests {
    @Test func throttledAlertsStopAtTheCapAndResumeAfterTheWindow() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2"], devices: ["u1": [Self.token(1)], "u2": [Self.token(2)]])
            defer { Task { await world.shutdown() } }
            try await world.app().test(.router) { client in
                func call(_ method: HTTPRequest.Method, _ uri: String, _ body: String) async throws -> [String: Any] {
                    let response = try await client.execute(
                        uri: uri,
                        method: method,
                        headers: jsonHeaders(bearer: Self.adminToken),
                        body: ByteBuffer(string: body)
                    )
                    #expect((200..<300).contains(response.status.code), "\(method) \(uri): \(String(buffer: response.body))")
                    return try jsonObject(response)
                }
                let channel = try await call(
                    .put,
                    "/v1/channels/feed",
                    #"""
                    {"kind": "feed", "name": "Feed", "categories": [{"id": "news", "name": "News", "is_default": true}, {"id": "promo", "name": "Promo", "is_default": false}],
                     "throttle": {"limit": 2, "window": "60m", "per": "category"}}
                    """#
                )
                #expect((channel["throttle"] as? [String: Any])?["window"] as? String == "1h")
                _ = try await call(
                    .put,
                    "/v1/webhooks/main",
                    #"{"url": "http://127.0.0.1:1/hooks", "events": ["notification.throttled"], "secret": "\#(String(repeating: "s", count: 32))"}"#
                )

                /// Sends to u1 with an alert; returns the notification's id.
                func send(_ title: String, category: String = "news") async throws -> String {
                    let sent = try await call(
                        .post,
                        "/v1/notifications",
                        #"{"channel_url": "feed", "template_key": "plain", "targets": ["u1"], "category": "\#(category)", "variables": {"title": "\#(title)"}, "push": {"alert": true}}"#
                    )
                    try await world.drain()
                    return sent["id"] as! String
                }
                func alerted(_ id: String) throws -> Bool {
                    try alerts(world).contains { (try payload($0)["herald"] as? [String: Any])?["message_id"] as? Int == Int(id) }
                }
                func throttled(_ id: String) async throws -> Int? {
                    ((try await call(.get, "/v1/notifications/\(id)", ""))["counts"] as? [String: Any])?["throttled"] as? Int
                }

                let first = try await send("one")
                let second = try await send("two")
                let third = try await send("three")
                // Two alerts in the hour, then silence; every notification still lands.
                #expect(try alerted(first) && alerted(second) && !alerted(third))
                let (heldThird, heldSecond) = (try await throttled(third), try await throttled(second))
                #expect(heldThird == 1 && heldSecond == 0)
                // Another category has a cap of its own.
                let promo = try await send("sale", category: "promo")
                #expect(try alerted(promo))
                let fourth = try await send("four")
                #expect(try !alerted(fourth))
                let collection = try jsonObject(
                    try await client.execute(uri: "/v1/me/channels/feed/collection", method: .get, headers: jsonHeaders(bearer: world.sessions["u1"]))
                )
                #expect((collection["notifications"] as? [Any])?.count == 5)
                let events = try await world.query(
                    "SELECT data ->> 'notification_id', data ->> 'beyond' FROM webhook_events WHERE type = 'notification.throttled' ORDER BY id"
                ).map { try $0.decode((String, String).self) }
                #expect(events.map(\.0) == [third, fourth] && events.allSatisfy { $0.1 == "silence" })

                // An hour later (the earlier ones moved back past the window), alerts resume.
                try await world.query("UPDATE notifications SET created_at = created_at - interval '61 minutes'")
                let later = try await send("later")
                #expect(try alerted(later))
            }
        }
    }

    @Test func aThrottleThatDropsKeepsTheCopiesFromUsersAtTheCap() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let users = (1...6).map { "u\($0)" }
            let world = try await world(db, users: users)
            defer { Task { await world.shutdown() } }
            try await world.app().test(.router) { client in
                let hook = try await client.execute(
                    uri: "/v1/webhooks/main",
                    method: .put,
                    headers: jsonHeaders(bearer: Self.adminToken),
                    body: ByteBuffer(
                        string:
                            #"{"url": "http://127.0.0.1:1/hooks", "events": ["notification.throttled"], "secret": "\#(String(repeating: "s", count: 32))"}"#
                    )
                )
                #expect(hook.status.code < 300)
                func send(_ audience: String, _ title: String) async throws -> [String: Any] {
                    let response = try await client.execute(
                        uri: "/v1/notifications",
                        method: .post,
                        headers: jsonHeaders(bearer: Self.adminToken),
                        body: ByteBuffer(
                            string:
                                #"{"channel_url": "feed", "template_key": "plain", \#(audience), "variables": {"title": "\#(title)"}, "throttle": {"limit": 1, "window": "1h", "beyond": "drop"}}"#
                        )
                    )
                    #expect(response.status.code < 300, "\(String(buffer: response.body))")
                    while try await NotificationStore(client: db.client).fanOutNextBatch(size: 2) != nil {}
                    return try jsonObject(response)
                }
                func titles(_ user: String) async throws -> [String] {
                    try await world.query(
                        """
                        SELECT n.data ->> 'title' FROM notification_recipients r JOIN users u ON u.key = r.user_key
                        JOIN notifications n ON n.id = r.notification_id WHERE u.id = '\(user)' ORDER BY n.id
                        """
                    ).map { try $0.decode(String.self) }
                }
                // u1 and u2 get their one of the hour; everyone else's first is the broadcast.
                _ = try await send(#""targets": ["u1", "u2"]"#, "listed")
                let broadcast = try await send(#""audience": "all""#, "everyone")
                let (u1, u3) = (try await titles("u1"), try await titles("u3"))
                #expect(u1 == ["listed"] && u3 == ["everyone"])
                let body = try jsonObject(
                    try await client.execute(
                        uri: "/v1/notifications/\(broadcast["id"] as! String)",
                        method: .get,
                        headers: jsonHeaders(bearer: Self.adminToken)
                    )
                )
                let counts = try #require(body["counts"] as? [String: Any])
                #expect(counts["throttled"] as? Int == 2 && counts["recipients"] as? Int == 4)
                #expect((body["throttle"] as? [String: Any])?["beyond"] as? String == "drop")
                // A listed send to someone at the cap leaves them out too.
                let again = try await send(#""targets": ["u3", "u4"]"#, "again")
                #expect(again["fanout"].flatMap { ($0 as? [String: Any])?["reached"] as? Int } == 0)
                #expect(try await titles("u4") == ["everyone"])
                // Each user left out raised the webhook event, saying so.
                let events = try await world.query(
                    "SELECT data ->> 'user_id', data ->> 'beyond' FROM webhook_events WHERE type = 'notification.throttled' ORDER BY id"
                ).map { try $0.decode((String, String).self) }
                #expect(events.map(\.0).sorted() == ["u1", "u2", "u3", "u4"] && events.allSatisfy { $0.1 == "drop" })
                // Unread counts stay true with the copies that were never written.
                try await CollectionTests.expectUnreadCountsMatchCopies(db)
            }
        }
    }
}
