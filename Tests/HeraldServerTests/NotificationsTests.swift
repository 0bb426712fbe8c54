import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldServices
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Postgres
import Prometheus
import ServiceLifecycle
import Testing

/// Sending, reading, changing and deleting notifications over HTTP against a real database.
@Suite("Notifications")
struct NotificationsTests {
    static let adminToken = "test-admin-token-notifications-0123"

    static let template = Template(
        key: "order.shipped",
        name: "Order shipped",
        variables: [
            .init(name: "order_id", type: .string, required: true),
            .init(name: "carrier", type: .string, defaultValue: .string("DHL")),
            .init(name: "items", type: .number),
        ],
        data: .object(["title": .string("Order {{order_id}} shipped with {{carrier}}"), "items": .string("{{items}}")]),
        pushTitle: "Shipped",
        pushBody: "{{order_id}} is on its way"
    )

    /// A channel with categories, the template, and users `u1`…`uN`.
    func seed(_ db: TestDatabase, users: Int = 3) async throws {
        _ = try await ChannelStore(client: db.client).put(
            Channel(
                url: "orders",
                kind: .feed,
                name: "Orders",
                categories: [.init(id: "shipping", name: "Shipping", isDefault: true), .init(id: "billing", name: "Billing", isDefault: false)]
            )
        )
        _ = try await TemplateStore(client: db.client).put(Self.template)
        try await db.client.query("INSERT INTO users (id) SELECT 'u' || i FROM generate_series(1, \(users)) AS i")
    }

    func send(_ client: some TestClientProtocol, _ body: String, key: String? = nil) async throws -> TestResponse {
        var headers = jsonHeaders(bearer: Self.adminToken)
        if let key { headers[HTTPField.Name("Idempotency-Key")!] = key }
        return try await client.execute(uri: "/v1/notifications", method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    func get(_ client: some TestClientProtocol, _ id: String) async throws -> TestResponse {
        try await client.execute(uri: "/v1/notifications/\(id)", method: .get, headers: jsonHeaders(bearer: Self.adminToken))
    }

    func count(_ sql: String, _ db: TestDatabase) async throws -> Int {
        try await db.client.query("\(unescaped: sql)").first!.decode(Int.self)
    }

    /// Each recipient's title as their collection would show it: their own data, else the shared data.
    func titles(_ db: TestDatabase, notification id: String) async throws -> [String: String] {
        let rows = try await db.client.query(
            """
            SELECT u.id, coalesce(r.data, n.data)->>'title' FROM notification_recipients r
            JOIN users u ON u.key = r.user_key JOIN notifications n ON n.id = r.notification_id
            WHERE r.notification_id = \(Int64(id)!) AND NOT r.deleted
            """
        )
        return Dictionary(uniqueKeysWithValues: try rows.map { try $0.decode((String, String).self) })
    }

    @Test func sendToThreeUsersRendersSharedAndPerUserVariables() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let response = try await send(
                    client,
                    """
                    {"channel_url":"orders","template_key":"order.shipped","targets":["u1","u2","u3","u1"],
                     "variables":{"order_id":"A-1","items":2},
                     "user_variables":{"u2":{"order_id":"B-2"},"u3":{"carrier":"UPS"}},
                     "tags":["orders"],"event_deadline":"2030-01-01T00:00:00.000Z","push":{"alert":true,"sound":"chime.caf"}}
                    """
                )
                #expect(response.status == .created)
                let body = try jsonObject(response)
                let id = try #require(body["id"] as? String)
                #expect(body["template_version"] as? Int == 1)
                #expect(body["category"] as? String == "shipping")  // the channel's default
                #expect((body["data"] as? [String: Any])?["title"] as? String == "Order A-1 shipped with DHL")
                #expect((body["data"] as? [String: Any])?["items"] as? String == "2")
                #expect(body["push_body"] as? String == "A-1 is on its way")
                #expect(body["event_deadline"] as? String == "2030-01-01T00:00:00.000Z")
                #expect((body["push"] as? [String: Any])?["sound"] as? String == "chime.caf")
                #expect((body["fanout"] as? [String: Any])?["reached"] as? Int == 3)

                #expect(
                    try await titles(db, notification: id) == [
                        "u1": "Order A-1 shipped with DHL",
                        "u2": "Order B-2 shipped with DHL",
                        "u3": "Order A-1 shipped with UPS",
                    ]
                )
                let pushBodies = try await db.client.query(
                    "SELECT r.push_body FROM notification_recipients r JOIN users u ON u.key = r.user_key WHERE u.id = 'u2'"
                )
                #expect(try pushBodies.first?.decode(String.self) == "B-2 is on its way")

                let fetched = try await get(client, id)
                #expect(fetched.status == .ok)
                let counts = try #require(try jsonObject(fetched)["counts"] as? [String: Any])
                #expect(counts["recipients"] as? Int == 3)
                #expect(counts["sent"] as? Int == 3)
                #expect(counts["delivered"] as? Int == 0)
                #expect(counts["read"] as? Int == 0)
            }
        }
    }

    @Test func renderingAndAddressingErrorsAre400sThatNameTheCulpritAndWriteNothing() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let base = #""channel_url":"orders","template_key":"order.shipped""#
                let cases: [(body: String, code: String, mentions: [String])] = [
                    (#"{\#(base),"targets":["u1"],"variables":{}}"#, "invalid_variables", ["order_id", "required"]),
                    (
                        #"{\#(base),"targets":["u1","u2"],"variables":{"order_id":"A"},"user_variables":{"u2":{"items":"two"}}}"#,
                        "invalid_variables", ["items", "u2", "number"]
                    ),
                    (#"{\#(base),"targets":["u1"],"variables":{"order_id":"A","colour":"red"}}"#, "invalid_variables", ["colour"]),
                    (#"{\#(base),"targets":["u1","ghost","u2","phantom"],"variables":{"order_id":"A"}}"#, "unknown_users", ["'ghost', 'phantom'"]),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"category":"marketing"}"#, "unknown_category",
                        ["marketing", "shipping"]
                    ),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"user_variables":{"u2":{}}}"#, "invalid_notification",
                        ["u2", "targets"]
                    ),
                    (
                        #"{"channel_url":"nope","template_key":"order.shipped","targets":["u1"],"variables":{"order_id":"A"}}"#, "unknown_channel",
                        ["nope"]
                    ),
                    (#"{"channel_url":"orders","template_key":"nope","targets":["u1"],"variables":{"order_id":"A"}}"#, "unknown_template", ["nope"]),
                    (#"{\#(base),"variables":{"order_id":"A"}}"#, "invalid_notification", ["targets"]),
                    (#"{\#(base),"targets":["u1"],"audience":"all","variables":{"order_id":"A"}}"#, "invalid_notification", ["both"]),
                    (#"{\#(base),"audience":"everyone","variables":{"order_id":"A"}}"#, "invalid_notification", ["audience"]),
                    (#"{\#(base),"targets":[],"variables":{"order_id":"A"}}"#, "invalid_notification", ["targets"]),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"event_deadline":"tomorrow"}"#, "invalid_notification",
                        ["event_deadline"]
                    ),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"push":{"aps":{"badge":3}}}"#, "invalid_notification",
                        ["push.aps.badge"]
                    ),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"push":{"collapse_id":"\#(String(repeating: "c", count: 65))"}}"#,
                        "invalid_notification", ["push.collapse_id"]
                    ),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":[[[[[[[[[["deep"]]]]]]]]]]}}"#, "invalid_notification",
                        ["variables.order_id"]
                    ),
                    (#"{\#(base),"targets":"u1"}"#, "invalid_json", ["$.targets"]),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"throttle":{"limit":20000,"window":"1h"}}"#,
                        "invalid_notification", ["throttle.limit"]
                    ),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"throttle":{"limit":2,"window":"0m"}}"#,
                        "invalid_notification", ["throttle.window"]
                    ),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"batch":{"key":"","window":"10m"}}"#,
                        "invalid_notification", ["batch.key"]
                    ),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"batch":{"key":"k","window":"2d"}}"#,
                        "invalid_notification", ["batch.window", "1 day"]
                    ),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"batch":{"key":"k","window":"1h","items":51}}"#,
                        "invalid_notification", ["batch.items"]
                    ),
                    (#"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"batch":{"key":"k"}}"#, "invalid_json", ["window"]),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"batch":{"key":"k","window":"1h","alert":"sometimes"}}"#,
                        "invalid_json", ["alert"]
                    ),
                    (
                        #"{\#(base),"targets":["u1"],"variables":{"order_id":"A"},"user_variables":{"u1":{"order_id":"B"}},"batch":{"key":"k","window":"1h"}}"#,
                        "invalid_notification", ["batch", "user_variables"]
                    ),
                ]
                for (body, code, mentions) in cases {
                    let response = try await send(client, body)
                    #expect(response.status == .badRequest, "\(body)")
                    #expect(try errorCode(response) == code, "\(body)")
                    let message = try #require((try jsonObject(response)["error"] as? [String: Any])?["message"] as? String)
                    for text in mentions { #expect(message.contains(text), "\(message) should mention \(text)") }
                }
                let tooMany = "[" + (1...10_001).map { "\"u\($0)\"" }.joined(separator: ",") + "]"
                let many = try await send(client, #"{\#(base),"targets":\#(tooMany),"variables":{"order_id":"A"}}"#)
                #expect(many.status == .badRequest)
                #expect(try errorCode(many) == "invalid_notification")

                let huge = try await send(
                    client,
                    #"{\#(base),"targets":["u1"],"variables":{"order_id":"\#(String(repeating: "x", count: 40_000))"}}"#
                )
                #expect(huge.status == .badRequest)
                #expect(try errorCode(huge) == "data_too_large")

                let oversized = try await send(client, #"{\#(base),"targets":["u1"],"tags":["\#(String(repeating: "t", count: 9 << 20))"]}"#)
                #expect(oversized.status == .contentTooLarge)
            }
            #expect(try await count("SELECT count(*) FROM notifications", db) == 0)
            #expect(try await count("SELECT count(*) FROM notification_recipients", db) == 0)
        }
    }

    @Test func idempotentRetriesReturnTheFirstResponseAndCreateNothing() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let body = #"{"channel_url":"orders","template_key":"order.shipped","targets":["u1","u2","u3"],"variables":{"order_id":"A"}}"#
                let first = try await send(client, body, key: "order-A-shipped")
                #expect(first.status == .created)
                // The same request, formatted differently, is the same request.
                let retry = try await send(client, body.replacingOccurrences(of: ",", with: ", "), key: "order-A-shipped")
                #expect(retry.status == .created)
                #expect(retry.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
                #expect(String(buffer: retry.body) == String(buffer: first.body))
                #expect(try await count("SELECT count(*) FROM notifications", db) == 1)
                #expect(try await count("SELECT count(*) FROM notification_recipients", db) == 3)

                let different = try await send(client, body.replacingOccurrences(of: #""A""#, with: #""B""#), key: "order-A-shipped")
                #expect(different.status == .unprocessableContent)
                #expect(try errorCode(different) == "idempotency_key_reused")

                let long = try await send(client, body, key: String(repeating: "k", count: 256))
                #expect(long.status == .badRequest)
                #expect(try errorCode(long) == "invalid_idempotency_key")

                // Concurrent requests with one key: exactly one notification, and every answer names it.
                let ids = try await withThrowingTaskGroup(of: String?.self) { group in
                    for _ in 0..<6 {
                        group.addTask {
                            let response = try await send(client, body, key: "concurrent-key")
                            return response.status == .created ? try jsonObject(response)["id"] as? String : nil
                        }
                    }
                    return try await group.reduce(into: [String?]()) { $0.append($1) }
                }
                #expect(ids.count == 6)
                #expect(Set(ids).count == 1)
                #expect(ids.first! != nil)
            }
            #expect(try await count("SELECT count(*) FROM notifications", db) == 2)
            #expect(try await count("SELECT count(*) FROM notification_recipients", db) == 6)
            #expect(try await count("SELECT count(*) FROM idempotency_keys", db) == 2)
            // Keys are kept for the retention period, then removed.
            let store = NotificationStore(client: db.client)
            #expect(try await store.deleteExpiredIdempotencyKeys() == 0)
            try await db.client.query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'order-A-shipped'")
            #expect(try await store.deleteExpiredIdempotencyKeys() == 1)
        }
    }

    @Test func audienceAllReachesEveryUserInBatches() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await seed(db, users: 25)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let response = try await send(
                    client,
                    """
                    {"channel_url":"orders","template_key":"order.shipped","audience":"all",
                     "variables":{"order_id":"ALL"},"user_variables":{"u20":{"order_id":"MINE"}}}
                    """
                )
                #expect(response.status == .accepted)
                let body = try jsonObject(response)
                let id = try #require(body["id"] as? String)
                #expect((body["fanout"] as? [String: Any])?["state"] as? String == "running")
                #expect((body["fanout"] as? [String: Any])?["audience_size"] as? Int == 25)
                #expect((body["fanout"] as? [String: Any])?["reached"] as? Int == 1)  // u20, who has own variables

                // A user created after the send is not part of "every user at the time of the send".
                try await db.client.query("INSERT INTO users (id) VALUES ('latecomer')")

                let store = NotificationStore(client: db.client)
                let first = try #require(try await store.fanOutNextBatch(size: 7))
                #expect(first.inserted == 7)
                #expect(!first.finished)
                let progress = try jsonObject(try await get(client, id))["fanout"] as? [String: Any]
                #expect(progress?["state"] as? String == "running")
                #expect(progress?["reached"] as? Int == 8)

                var batches = 1
                while let next = try await store.fanOutNextBatch(size: 7) {
                    batches += 1
                    #expect(next.notificationID == Int64(id))
                }
                #expect(batches == 4)
                let done = try jsonObject(try await get(client, id))
                #expect((done["fanout"] as? [String: Any])?["state"] as? String == "done")
                #expect((done["counts"] as? [String: Any])?["recipients"] as? Int == 25)
                let titles = try await titles(db, notification: id)
                #expect(titles.count == 25)
                #expect(titles["u20"] == "Order MINE shipped with DHL")
                #expect(titles["u7"] == "Order ALL shipped with DHL")
                #expect(titles["latecomer"] == nil)
            }
        }
    }

    @Test func theFanoutServiceFinishesAndFoldsABroadcastWhenWoken() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await seed(db, users: 40)
            let wake = WakeSignal()
            let dependencies = HeraldApplication.Dependencies(
                client: db.client,
                migrator: Migrator(client: db.client, migrations: try TestPostgres.repositoryMigrations()),
                metricsRegistry: .init(),
                adminToken: Self.adminToken,
                fanoutWake: wake
            )
            // Polling an hour apart: only the wake-up from the send can get the work done in time.
            let service = FanoutService(client: db.client, batchSize: 16, wake: wake, pollInterval: .seconds(3600), logger: Logger(label: "test"))
            let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                try await Application(router: HeraldApplication.buildRouter(dependencies).router).test(.router) { client in
                    let response = try await send(
                        client,
                        #"{"channel_url":"orders","template_key":"order.shipped","audience":"all","variables":{"order_id":"X"}}"#
                    )
                    let id = try #require(try jsonObject(response)["id"] as? String)
                    let finished = try await withTimeout(.seconds(20), what: "the fan-out to finish") {
                        while true {
                            let fanout = try jsonObject(try await get(client, id))["fanout"] as? [String: Any]
                            if fanout?["state"] as? String == "done" { return fanout?["reached"] as? Int }
                            try await Task.sleep(for: .milliseconds(20))
                        }
                    }
                    #expect(finished == 40)
                    // Then, with no further wake-up, it folds the broadcast into the 40 users' counters.
                    let key = try #require(Int64(id))
                    try await withTimeout(.seconds(20), what: "the broadcast to be folded") {
                        while try await !db.client.query("SELECT folded_through >= fanout_through FROM notifications WHERE id = \(key)").first!
                            .decode(Bool.self)
                        {
                            try await Task.sleep(for: .milliseconds(20))
                        }
                    }
                    let counts = try await db.client.query(
                        """
                        SELECT count(*) FILTER (WHERE herald_unread(u.key, n.channel_key) = 1), sum(herald_broadcasts_reaching(u.key, n.channel_key))::int8
                        FROM users u CROSS JOIN notifications n WHERE n.id = \(key)
                        """
                    ).first!.decode((Int, Int64).self)
                    #expect(counts.0 == 40 && counts.1 == 0)
                }
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }
    }

    @Test func patchReRendersForEveryRecipientAndDeleteLeavesTombstones() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let sent = try await send(
                    client,
                    #"{"channel_url":"orders","template_key":"order.shipped","targets":["u1","u2","u3"],"variables":{"order_id":"A"},"user_variables":{"u1":{"carrier":"UPS"}}}"#
                )
                let id = try #require(try jsonObject(sent)["id"] as? String)
                let positionsBefore = try await db.client.query("SELECT max(change_xid) FROM notification_recipients").first!.decode(Int64.self)

                let patch = try await client.execute(
                    uri: "/v1/notifications/\(id)",
                    method: .patch,
                    headers: jsonHeaders(bearer: Self.adminToken),
                    body: ByteBuffer(string: #"{"variables":{"order_id":"A-corrected"},"user_variables":{"u2":{"carrier":"FedEx"}}}"#)
                )
                #expect(patch.status == .ok)
                #expect((try jsonObject(patch)["data"] as? [String: Any])?["title"] as? String == "Order A-corrected shipped with DHL")
                #expect(
                    try await titles(db, notification: id) == [
                        "u1": "Order A-corrected shipped with DHL",  // per-user variables are replaced, not merged
                        "u2": "Order A-corrected shipped with FedEx",
                        "u3": "Order A-corrected shipped with DHL",
                    ]
                )
                // Every copy moved forward in its user's change stream.
                let bumped = try await count("SELECT count(*) FROM notification_recipients WHERE change_xid > \(positionsBefore)", db)
                #expect(bumped == 3)

                let stranger = try await client.execute(
                    uri: "/v1/notifications/\(id)",
                    method: .patch,
                    headers: jsonHeaders(bearer: Self.adminToken),
                    body: ByteBuffer(string: #"{"variables":{"order_id":"B"},"user_variables":{"nobody":{}}}"#)
                )
                #expect(stranger.status == .badRequest)
                #expect(try errorCode(stranger) == "not_recipients")
                let missing = try await client.execute(
                    uri: "/v1/notifications/\(id)",
                    method: .patch,
                    headers: jsonHeaders(bearer: Self.adminToken),
                    body: ByteBuffer(string: #"{"variables":{}}"#)
                )
                #expect(try errorCode(missing) == "invalid_variables")

                let beforeDelete = try await db.client.query("SELECT max(change_xid) FROM notification_recipients").first!.decode(Int64.self)
                let deleted = try await client.execute(uri: "/v1/notifications/\(id)", method: .delete, headers: jsonHeaders(bearer: Self.adminToken))
                #expect(deleted.status == .noContent)
                let tombstones = try await count("SELECT count(*) FROM notification_recipients WHERE deleted AND change_xid > \(beforeDelete)", db)
                #expect(tombstones == 3)
                #expect(try await get(client, id).status == .notFound)
                let again = try await client.execute(uri: "/v1/notifications/\(id)", method: .delete, headers: jsonHeaders(bearer: Self.adminToken))
                #expect(again.status == .notFound)
                #expect(try errorCode(again) == "notification_not_found")
                // Ids are plain decimal: anything else is a 400 naming the field, not some other id.
                for bad in ["not-a-number", "+\(id)", "0\(id)", "0", "99999999999999999999"] {
                    let response = try await get(client, bad)
                    #expect(response.status == .badRequest, "\(bad)")
                    #expect(try errorCode(response) == "invalid_notification_id")
                }
            }
        }
    }

    @Test func aChangingBroadcastCannotBePatchedButCanBeDeleted() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await seed(db, users: 5)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let sent = try await send(
                    client,
                    #"{"channel_url":"orders","template_key":"order.shipped","audience":"all","variables":{"order_id":"A"}}"#
                )
                let id = try #require(try jsonObject(sent)["id"] as? String)
                let patch = try await client.execute(
                    uri: "/v1/notifications/\(id)",
                    method: .patch,
                    headers: jsonHeaders(bearer: Self.adminToken),
                    body: ByteBuffer(string: #"{"variables":{"order_id":"B"}}"#)
                )
                #expect(patch.status == .conflict)
                #expect(try errorCode(patch) == "fanout_in_progress")
                let store = NotificationStore(client: db.client)
                _ = try await store.fanOutNextBatch(size: 2)
                let deleted = try await client.execute(uri: "/v1/notifications/\(id)", method: .delete, headers: jsonHeaders(bearer: Self.adminToken))
                #expect(deleted.status == .noContent)
                // The deleted broadcast reaches nobody else.
                #expect(try await store.fanOutNextBatch(size: 2) == nil)
                #expect(try await count("SELECT count(*) FROM notification_recipients WHERE NOT deleted", db) == 0)
                #expect(try await count("SELECT count(*) FROM notification_recipients WHERE deleted", db) == 2)
            }
        }
    }

    @Test func oldNotificationsKeepTheTemplateVersionTheyWereRenderedWith() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let body = #"{"channel_url":"orders","template_key":"order.shipped","targets":["u1"],"variables":{"order_id":"A"}}"#
                let first = try #require(try jsonObject(try await send(client, body))["id"] as? String)

                let path = NSTemporaryDirectory() + "herald-fixtures-\(UUID().uuidString.prefix(8))"
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: path) }
                var changed = Self.template
                changed.data = .object(["title": .string("{{order_id}} is on its way ({{carrier}})"), "items": .string("{{items}}")])
                let file = try JSONEncoder().encode(["templates": [changed]])
                try file.write(to: URL(fileURLWithPath: path + "/templates.json"))
                let report = try await FixtureLoader(client: db.client).load(directory: path)
                #expect(report.items.map(\.outcome) == ["updated"])

                let second = try #require(try jsonObject(try await send(client, body))["id"] as? String)
                let old = try jsonObject(try await get(client, first))
                #expect(old["template_version"] as? Int == 1)
                #expect((old["data"] as? [String: Any])?["title"] as? String == "Order A shipped with DHL")
                let new = try jsonObject(try await get(client, second))
                #expect(new["template_version"] as? Int == 2)
                #expect((new["data"] as? [String: Any])?["title"] as? String == "A is on its way (DHL)")

                // Re-rendering the old notification uses its own version, not the latest.
                let patch = try await client.execute(
                    uri: "/v1/notifications/\(first)",
                    method: .patch,
                    headers: jsonHeaders(bearer: Self.adminToken),
                    body: ByteBuffer(string: #"{"variables":{"order_id":"A2"}}"#)
                )
                #expect((try jsonObject(patch)["data"] as? [String: Any])?["title"] as? String == "Order A2 shipped with DHL")
            }
        }
    }
}
