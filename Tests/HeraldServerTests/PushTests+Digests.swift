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

/// Digests end to end: batched sends to a user fold into one notification that changes in place —
/// seen by incremental sync, with one alert per window at its start or its end (the test moves the
/// window's end: the clock it controls) — and a batched broadcast folds into every user's digest
/// batch by batch of its fan-out.
extension PushTests {
    static let likes = Template(
        key: "likes",
        name: "Likes",
        variables: [.init(name: "actor", type: .string, required: true)],
        data: .object([
            "title": .string("{{batch.first.actor}}{{#batch.several}} and {{batch.others}} others{{/batch.several}} liked your photo"),
            "latest": .string("{{batch.latest.actor}}"),
            "recent": .string("{{#batch.items}}{{actor}} {{/batch.items}}"),
        ]),
        pushTitle: "{{batch.count}} likes",
        variants: ["de": .init(data: .object(["title": .string("{{batch.count}} Likes von {{batch.first.actor}} und anderen")]))]
    )

    /// A world whose admin client sends likes; `send` returns the response's JSON.
    struct DigestSender {
        let client: any TestClientProtocol

        func send(
            _ actor: String,
            to audience: String,
            batch: String,
            push: String = #"{"alert": true}"#,
            key: String? = nil
        ) async throws
            -> [String: Any]
        {
            var headers = jsonHeaders(bearer: PushTests.adminToken)
            if let key { headers[HTTPField.Name("Idempotency-Key")!] = key }
            let response = try await client.execute(
                uri: "/v1/notifications",
                method: .post,
                headers: headers,
                body: ByteBuffer(
                    string:
                        #"{"channel_url": "feed", "template_key": "likes", \#(audience), "variables": {"actor": "\#(actor)"}, "push": \#(push), "batch": \#(batch)}"#
                )
            )
            #expect(response.status.code < 300, "\(String(buffer: response.body))")
            return try jsonObject(response)
        }
    }

    @Test func aBurstOfBatchedSendsIsOneNotificationThatChangesInPlace() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2"], devices: ["u1": [Self.token(1)]])
            defer { Task { await world.shutdown() } }
            _ = try await TemplateStore(client: db.client).put(Self.likes)
            try await world.app().test(.router) { client in
                let sender = DigestSender(client: client)
                let batch = #"{"key": "likes:photo-9", "window": "10m", "items": 3}"#
                _ = try await client.execute(
                    uri: "/v1/webhooks/main",
                    method: .put,
                    headers: jsonHeaders(bearer: Self.adminToken),
                    body: ByteBuffer(
                        string:
                            #"{"url": "http://127.0.0.1:1/hooks", "events": ["notification.digest_updated"], "secret": "\#(String(repeating: "s", count: 32))"}"#
                    )
                )
                func collection(_ query: String = "") async throws -> [String: Any] {
                    try jsonObject(
                        try await client.execute(
                            uri: "/v1/me/channels/feed/collection\(query)",
                            method: .get,
                            headers: jsonHeaders(bearer: world.sessions["u1"])
                        )
                    )
                }
                func escaped(_ token: Any?) -> String {
                    (token as? String)?.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_"))) ?? ""
                }
                func items(_ body: [String: Any]) -> [[String: Any]] { body["notifications"] as? [[String: Any]] ?? [] }
                // The first item's data, empty when there is none (a failed expectation, not a crash).
                func data(_ items: [[String: Any]]) -> [String: Any] { items.first?["data"] as? [String: Any] ?? [:] }
                func unread(_ body: [String: Any]) -> Int? {
                    ((body["channel"] as? [String: Any])?["state"] as? [String: Any])?["unread_count"] as? Int
                }

                let start = try await collection()
                let first = try await sender.send("a1", to: #""targets": ["u1"]"#, batch: batch)
                let digest = first["id"] as! String
                #expect((first["batch"] as? [String: Any])?["window"] as? String == "10m")
                try await world.drain()
                let afterFirst = try await collection("?token=\(escaped(start["next_token"]))")
                #expect(items(afterFirst).map { $0["id"] as? String } == [digest])
                #expect(data(items(afterFirst))["title"] as? String == "a1 liked your photo")

                // 99 more, one retried with its key: one event each, folded into the same notification.
                for index in 2...100 {
                    let sent = try await sender.send("a\(index)", to: #""targets": ["u1"]"#, batch: batch, key: "like-\(index)")
                    #expect((sent["batch"] as? [String: Any])?["folded"] as? Int == 1)
                    #expect((sent["fanout"] as? [String: Any])?["reached"] as? Int == 0)
                    if index == 50 { _ = try await sender.send("a50", to: #""targets": ["u1"]"#, batch: batch, key: "like-50") }
                }
                try await world.drain()
                let whole = try await collection()
                #expect(items(whole).map { $0["id"] as? String } == [digest])
                let title = data(items(whole))["title"] as? String
                #expect(title == "a1 and 99 others liked your photo")
                #expect(data(items(whole))["recent"] as? String == "a98 a99 a100 ")
                #expect(unread(whole) == 1)
                // One alert: the first's. The changes went as silent refreshes.
                #expect(alerts(world).count == 1)
                #expect(
                    try (payload(alerts(world)[0])["aps"] as? [String: Any]).flatMap { ($0["alert"] as? [String: Any])?["title"] as? String }
                        == "1 likes"
                )

                // Incremental sync from after the first send: the same notification, as it now reads;
                // from the newest token, nothing until it changes again.
                let synced = try await collection("?token=\(escaped(afterFirst["next_token"]))")
                #expect(items(synced).map { $0["id"] as? String } == [digest])
                #expect(data(items(synced))["latest"] as? String == "a100")
                let quiet = try await collection("?token=\(escaped(synced["next_token"]))")
                #expect(items(quiet).isEmpty && quiet["is_live"] as? Bool == true)

                // Read, then one more like: unread again, changed in place once more.
                let read = try await client.execute(
                    uri: "/v1/me/channels/feed/read",
                    method: .post,
                    headers: jsonHeaders(bearer: world.sessions["u1"]),
                    body: ByteBuffer(string: "")
                )
                #expect(read.status == .ok)
                #expect(unread(try await collection()) == 0)
                _ = try await sender.send("a101", to: #""targets": ["u1"]"#, batch: batch)
                let again = try await collection("?token=\(escaped(quiet["next_token"]))")
                #expect(items(again).map { $0["id"] as? String } == [digest])
                #expect(items(again).first?["status"] as? String != "READ")
                #expect(data(items(again))["title"] as? String == "a1 and 100 others liked your photo")
                #expect(unread(try await collection()) == 1)

                let events = try await world.query(
                    "SELECT (data ->> 'count')::int, data ->> 'notification_id', data -> 'user_ids' ->> 0 FROM webhook_events WHERE type = 'notification.digest_updated' ORDER BY id"
                ).map { try $0.decode((Int, String, String).self) }
                #expect(events.map(\.0) == Array(2...101))
                #expect(events.allSatisfy { $0.1 == digest && $0.2 == "u1" })

                // The window over (moved back: the test's clock), the next like starts a new digest,
                // with an alert of its own.
                try await world.query("UPDATE notifications SET batch_closes_at = now() - interval '1 second' WHERE id = \(digest)")
                let next = try await sender.send("b1", to: #""targets": ["u1"]"#, batch: batch)
                try await world.drain()
                #expect(next["id"] as? String != digest && (next["batch"] as? [String: Any])?["folded"] as? Int == 0)
                #expect(items(try await collection()).count == 2)
                #expect(alerts(world).count == 2)
                // Another key is another digest.
                _ = try await sender.send("c1", to: #""targets": ["u1"]"#, batch: #"{"key": "likes:photo-10", "window": "10m"}"#)
                #expect(items(try await collection()).count == 3)

                // A digest is not edited (its copies render several sends); it is deleted, and the
                // next like opens a new one. Every counter still matches the copies.
                let opened = next["id"] as! String
                let patch = try await client.execute(
                    uri: "/v1/notifications/\(opened)",
                    method: .patch,
                    headers: jsonHeaders(bearer: Self.adminToken),
                    body: ByteBuffer(string: #"{"variables": {"actor": "zed"}}"#)
                )
                #expect(patch.status == .conflict)
                #expect(try errorCode(patch) == "batched_notification")
                _ = try await sender.send("b2", to: #""targets": ["u1"]"#, batch: batch)
                let deleted = try await client.execute(
                    uri: "/v1/notifications/\(opened)",
                    method: .delete,
                    headers: jsonHeaders(bearer: Self.adminToken)
                )
                #expect(deleted.status.code < 300)
                let reopened = try await sender.send("b3", to: #""targets": ["u1"]"#, batch: batch)
                #expect((reopened["batch"] as? [String: Any])?["folded"] as? Int == 0)
                #expect(items(try await collection()).count == 3)
                try await CollectionTests.expectUnreadCountsMatchCopies(db)
            }
        }
    }

    @Test func aDigestAlertsAtTheEndOfItsWindowAndBroadcastsFoldBatchByBatch() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let users = (1...5).map { "u\($0)" }
            let world = try await world(db, users: users, devices: ["u1": [Self.token(1)], "u2": [Self.token(2)], "u3": [Self.token(3)]])
            defer { Task { await world.shutdown() } }
            _ = try await TemplateStore(client: db.client).put(Self.likes)
            try await world.query("UPDATE users SET locale = 'de-DE' WHERE id = 'u2'")
            let store = NotificationStore(client: db.client)
            try await world.app().test(.router) { client in
                let sender = DigestSender(client: client)
                let last = #"{"key": "likes:all", "window": "10m", "alert": "last"}"#
                // A broadcast opens everyone's digest; two more fold in, each fanned out two users at a time.
                var ids: [String] = []
                for actor in ["a1", "a2", "a3"] {
                    ids.append(try await sender.send(actor, to: #""audience": "all""#, batch: last)["id"] as! String)
                    while try await store.fanOutNextBatch(size: 2) != nil {}
                }
                // One more, listed, to u1 only.
                _ = try await sender.send("a4", to: #""targets": ["u1"]"#, batch: last)
                try await world.drain()
                #expect(alerts(world).isEmpty)
                let copies = try await world.query(
                    """
                    SELECT u.id, r.notification_id::text, coalesce(r.batch_count, 1), r.data ->> 'title' FROM notification_recipients r
                    JOIN users u ON u.key = r.user_key ORDER BY u.id
                    """
                ).map { try $0.decode((String, String, Int, String).self) }
                #expect(copies.count == 5 && copies.allSatisfy { $0.1 == ids[0] })
                #expect(copies.map(\.2) == [4, 3, 3, 3, 3])
                #expect(copies[0].3 == "a1 and 3 others liked your photo")
                #expect(copies[1].3 == "3 Likes von a1 und anderen")
                #expect(copies[2].3 == "a1 and 2 others liked your photo")
                let folded = try await world.query("SELECT batch_folded FROM notifications ORDER BY id").map { try $0.decode(Int64.self) }
                #expect(folded == [0, 5, 5, 1])

                // u3 reads theirs before the window ends: no alert for them.
                let read = try await client.execute(
                    uri: "/v1/me/channels/feed/read",
                    method: .post,
                    headers: jsonHeaders(bearer: world.sessions["u3"]),
                    body: ByteBuffer(string: "")
                )
                #expect(read.status == .ok)
                // Before the window's end nothing is due; at it, one alert per device of those who have
                // not read it, as it then reads.
                let closes = try await world.query("SELECT batch_closes_at FROM notifications WHERE id = \(ids[0])")[0].decode(Date.self)
                #expect(try await store.queueDigestAlerts(now: closes - 1) == 0)
                #expect(try await store.queueDigestAlerts(now: closes + 1) == 1)
                try await world.drain()
                let titles = try alerts(world).map {
                    try (payload($0)["aps"] as? [String: Any]).flatMap { ($0["alert"] as? [String: Any])?["title"] as? String }
                }
                #expect(titles.sorted { ($0 ?? "") < ($1 ?? "") } == ["3 likes", "4 likes"])
                #expect(try await store.queueDigestAlerts(now: closes + 60) == 0)

                // `none`: never an alert, at the start or the end.
                let quiet = try await sender.send("q1", to: #""targets": ["u1"]"#, batch: #"{"key": "quiet", "window": "1m", "alert": "none"}"#)
                try await world.drain()
                #expect(alerts(world).count == 2)
                #expect(try await store.queueDigestAlerts(now: closes + 3_600) == 0)
                #expect(quiet["id"] != nil)

                // A template that reads the recipient's profile renders per user: no digest of it.
                _ = try await TemplateStore(client: db.client).put(
                    Template(key: "hello", name: "Hello", variables: [], data: .object(["title": .string("Hi {{user.nickname}}")]))
                )
                let personal = try await client.execute(
                    uri: "/v1/notifications",
                    method: .post,
                    headers: jsonHeaders(bearer: Self.adminToken),
                    body: ByteBuffer(
                        string: #"{"channel_url": "feed", "template_key": "hello", "targets": ["u1"], "batch": {"key": "k", "window": "1m"}}"#
                    )
                )
                #expect(personal.status == .badRequest)
                #expect(try errorCode(personal) == "invalid_notification")
            }
        }
    }
}
