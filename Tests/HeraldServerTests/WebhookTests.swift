import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldServices
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Postgres
import Testing

@testable import HeraldStore

/// Webhooks against a real local receiver: what arrives, signed how, and what happens when the
/// receiver fails, hangs, closes the connection, is down or refuses.
@Suite("Webhooks", .serialized, .timeLimit(.minutes(3)))
struct WebhookTests {
    static let adminToken = ReceiptsTests.adminToken
    static let secret = "whsec-0123456789abcdef0123456789"

    struct World {
        let db: TestDatabase
        let box: SecretBox
        let sessions: [String: String]

        var store: WebhookStore { WebhookStore(client: db.client, box: box) }

        func app() throws -> some ApplicationProtocol {
            Application(router: HeraldApplication.buildRouter(try heraldDependencies(db, adminToken: WebhookTests.adminToken, secrets: box)).router)
        }

        /// Runs a dispatcher (quick to time out and to poll) while `body` runs.
        func withDispatcher(timeout: Duration = .seconds(30), _ body: () async throws -> Void) async throws {
            var settings = WebhookSettings()
            settings.timeout = timeout
            settings.pollInterval = .milliseconds(20)
            let dispatcher = WebhookDispatcher(client: db.client, box: box, settings: settings, listener: nil, logger: Logger(label: "test.webhooks"))
            let task = Task { try await dispatcher.run() }
            defer { task.cancel() }
            try await body()
            task.cancel()
            _ = try? await task.value
        }

        func count(_ sql: String) async throws -> Int {
            try await db.client.query(PostgresQuery(unsafeSQL: sql))[0].decode(Int.self)
        }
    }

    func world(_ db: TestDatabase) async throws -> World {
        let sessions = try await ReceiptsTests().seed(db)
        return World(db: db, box: try SecretBox(key: SecureRandom.bytes(32)), sessions: sessions)
    }

    func putWebhook(_ client: some TestClientProtocol, name: String = "backend", _ body: String) async throws -> TestResponse {
        try await client.execute(
            uri: "/v1/webhooks/\(name)",
            method: .put,
            headers: jsonHeaders(bearer: Self.adminToken),
            body: ByteBuffer(string: body)
        )
    }

    @Test func webhooksAreDefinedCheckedAndNeverShowTheirSecret() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await world(db)
            try await world.app().test(.router) { client in
                let created = try await putWebhook(
                    client,
                    #"{"url":"https://example.com/hooks","events":["notification.read","user.erased"],"secret":"\#(Self.secret)"}"#
                )
                #expect(created.status == .created)
                let body = try jsonObject(created)
                #expect(body["status"] as? String == "active")
                #expect(body["events"] as? [String] == ["notification.read", "user.erased"])
                #expect(body["batch_size"] as? Int == 50)
                #expect(!String(buffer: created.body).contains(Self.secret))
                // Sealed at rest.
                let stored = try await db.client.query("SELECT secret FROM webhooks")[0].decode(PostgresBytes.self).bytes
                #expect(!String(decoding: stored, as: UTF8.self).contains(Self.secret))
                // Replaced without a secret: the stored one stays.
                let replaced = try await putWebhook(client, #"{"url":"http://127.0.0.1:9/x","events":["push.failed"],"batch_size":5}"#)
                #expect(replaced.status == .ok)
                #expect(try world.store.box.open(stored, context: WebhookStore.context("backend")) == Array(Self.secret.utf8))
                let listed = try jsonObject(
                    try await client.execute(uri: "/v1/webhooks", method: .get, headers: jsonHeaders(bearer: Self.adminToken))
                )
                #expect((listed["webhooks"] as? [[String: Any]])?.map { $0["url"] as? String } == ["http://127.0.0.1:9/x"])
                #expect(!String(describing: listed).contains(Self.secret))

                for (body, name) in [
                    (#"{"url":"https://example.com","events":["push.failed"]}"#, "new"),  // no secret
                    (#"{"url":"ftp://example.com","events":["push.failed"],"secret":"\#(Self.secret)"}"#, "backend"),
                    (#"{"url":"https://example.com","events":["notification.sent"],"secret":"\#(Self.secret)"}"#, "backend"),
                    (#"{"url":"https://example.com","events":[],"secret":"\#(Self.secret)"}"#, "backend"),
                    (#"{"url":"https://example.com","events":["push.failed"],"secret":"short"}"#, "backend"),
                    (#"{"url":"https://example.com","events":["push.failed"],"batch_size":0}"#, "backend"),
                ] {
                    let refused = try await putWebhook(client, name: name, body)
                    #expect(refused.status == .badRequest, "\(body)")
                    #expect(try errorCode(refused) == "invalid_webhook", "\(body)")
                }
                let badName = try await putWebhook(client, name: "a%20b", #"{"url":"https://example.com","events":["push.failed"]}"#)
                #expect(try errorCode(badName) == "invalid_name")
                #expect(
                    try await client.execute(uri: "/v1/webhooks/backend", method: .delete, headers: jsonHeaders(bearer: Self.adminToken)).status
                        == .noContent
                )
                let gone = try await client.execute(uri: "/v1/webhooks/backend", method: .get, headers: jsonHeaders(bearer: Self.adminToken))
                #expect(gone.status == .notFound)
                #expect(try errorCode(gone) == "webhook_not_found")
            }
        }
    }

    @Test func everyEventArrivesSignedInBatches() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await world(db)
            let receiver = try await WebhookReceiver.start()
            defer { Task { await receiver.shutdown() } }
            try await world.app().test(.router) { client in
                let all = WebhookEventType.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ",")
                #expect(
                    try await putWebhook(client, #"{"url":"\#(receiver.url)","events":[\#(all)],"secret":"\#(Self.secret)","batch_size":2}"#).status
                        == .created
                )
                let receipts = ReceiptsTests()
                let id = try await receipts.send(client, to: ["u1", "u2"])
                // Nothing is written for a change that rolls back.
                try? await db.client.withTransaction { connection in
                    try await connection.query("SELECT herald_webhook_event('notification.read', '{\"rolled\":\"back\"}')")
                    throw CancellationError()
                }
                #expect(try await world.count("SELECT count(*) FROM webhook_events") == 0)
                #expect(try await receipts.post(client, "/v1/me/delivered", world.sessions["u1"], #"{"notification_ids":["\#(id)"]}"#).status == .ok)
                #expect(try await receipts.post(client, "/v1/me/channels/feed/read", world.sessions["u1"], "{}").status == .ok)
                for type in ["viewed", "clicked"] {
                    let logged = try await receipts.post(
                        client,
                        "/v1/me/events",
                        world.sessions["u2"],
                        #"{"type":"\#(type)","notification_ids":["\#(id)"]}"#
                    )
                    #expect(logged.status == .noContent)
                }
                #expect(try await receipts.post(client, "/v1/me/notifications/\(id)/actions/ack", world.sessions["u2"], "").status == .ok)
                // A send whose throttle drops what is beyond one an hour: u1 already has one.
                let throttled = try await client.execute(
                    uri: "/v1/notifications",
                    method: .post,
                    headers: jsonHeaders(bearer: ReceiptsTests.adminToken),
                    body: ByteBuffer(
                        string:
                            #"{"channel_url":"feed","template_key":"plain","variables":{"title":"t"},"targets":["u1"],"throttle":{"limit":1,"window":"1h","beyond":"drop"}}"#
                    )
                )
                #expect(throttled.status == .created)
                // Two batched sends to u2: the second folds into the first's digest.
                for title in ["d1", "d2"] {
                    let batched = try await client.execute(
                        uri: "/v1/notifications",
                        method: .post,
                        headers: jsonHeaders(bearer: ReceiptsTests.adminToken),
                        body: ByteBuffer(
                            string:
                                #"{"channel_url":"feed","template_key":"plain","variables":{"title":"\#(title)"},"targets":["u2"],"batch":{"key":"k","window":"1h"}}"#
                        )
                    )
                    #expect(batched.status == .created)
                }
                let device = String(repeating: "ab", count: 32)
                #expect(
                    try await client.execute(
                        uri: "/v1/me/devices/\(device)",
                        method: .put,
                        headers: jsonHeaders(bearer: world.sessions["u1"]),
                        body: ByteBuffer(string: #"{"environment":"sandbox","topic":"com.example.app"}"#)
                    ).status == .created
                )
                // APNs says the token is dead: the dispatcher records it this way.
                let (userKey, deviceID) = try await db.client.query("SELECT user_key, id FROM devices")[0].decode((Int64, Int64).self)
                try await db.client.withTransaction { connection in
                    _ = try await PushStore.recordFailure(
                        userKey: userKey,
                        deviceID: deviceID,
                        address: .apns(token: device, environment: "sandbox", topic: "com.example.app"),
                        status: 410,
                        reason: "Unregistered",
                        attempts: 1,
                        removeToken: true,
                        invalidSince: nil,
                        on: connection
                    )
                }
                let erasures = UserErasureStore(client: db.client)
                _ = try await erasures.start(userID: "u3")
                try await waitUntil("u3's erasure") { try await erasures.eraseNextBatch(size: 100, grace: .zero)?.finished == true }
                #expect(try await world.count("SELECT count(*) FROM webhook_events") == 10)

                try await world.withDispatcher {
                    try await waitUntil("every event to arrive") { receiver.acceptedEvents.count >= 10 }
                    try await waitUntil("the outbox to empty") { try await world.count("SELECT count(*) FROM webhook_events") == 0 }
                }
                let events = receiver.acceptedEvents
                #expect(Set(events.compactMap { $0["type"] as? String }) == Set(WebhookEventType.allCases.map(\.rawValue)))
                #expect(Set(events.compactMap { $0["id"] as? String }).count == events.count)
                for request in receiver.requests {
                    #expect(request.header("Content-Type") == "application/json")
                    let signature = try #require(request.header(WebhookSignature.headerName))
                    #expect(WebhookSignature.verify(header: signature, secret: Array(Self.secret.utf8), body: request.body))
                    #expect(!WebhookSignature.verify(header: signature, secret: Array(Self.secret.utf8), body: request.body + [0x20]))
                    #expect(!WebhookSignature.verify(header: signature, secret: Array("another secret entirely!".utf8), body: request.body))
                    #expect(
                        !WebhookSignature.verify(
                            header: signature,
                            secret: Array(Self.secret.utf8),
                            body: request.body,
                            now: Date().addingTimeInterval(301)
                        )
                    )
                    let batch = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
                    #expect(((batch["events"] as? [Any])?.count ?? 0) <= 2)
                }
                func data(_ type: String) -> [String: Any]? {
                    events.first { $0["type"] as? String == type }?["data"] as? [String: Any]
                }
                #expect(data("notification.delivered")?["notification_id"] as? String == id)
                #expect(data("notification.delivered")?["user_id"] as? String == "u1")
                #expect(data("notification.read")?["channel_url"] as? String == "feed")
                #expect(data("notification.read")?["read_at"] is String)
                #expect(data("notification.clicked")?["user_id"] as? String == "u2")
                #expect(data("notification.viewed")?["count"] as? Int == 1)
                #expect(data("notification.action")?["action_id"] as? String == "ack" && data("notification.action")?["user_id"] as? String == "u2")
                #expect(data("push.failed")?["status"] as? Int == 410)
                #expect(data("push.failed")?["token_removed"] as? Bool == true)
                #expect(data("device.removed")?["device_token"] as? String == device)
                #expect(data("user.erased")?["user_id"] as? String == "u3")
                #expect(events.allSatisfy { $0["created_at"] is String })
            }
        }
    }

    @Test func failuresAreRetriedDeadLetteredResentAndPaused() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await world(db)
            let receiver = try await WebhookReceiver.start()
            defer { Task { await receiver.shutdown() } }
            try await world.app().test(.router) { client in
                let admin = jsonHeaders(bearer: Self.adminToken)
                let define = #"{"url":"\#(receiver.url)","events":["notification.clicked"],"secret":"\#(Self.secret)"}"#
                #expect(try await putWebhook(client, define).status == .created)
                let receipts = ReceiptsTests()
                let id = try await receipts.send(client, to: ["u1"])
                func click() async throws {
                    let logged = try await receipts.post(
                        client,
                        "/v1/me/events",
                        world.sessions["u1"],
                        #"{"type":"clicked","notification_ids":["\#(id)"]}"#
                    )
                    #expect(logged.status == .noContent)
                }
                func delivery() async throws -> (attempts: Int, status: Int?, error: String?, dueIn: Double, claimed: Bool, failed: Bool)? {
                    try await db.client.query(
                        """
                        SELECT attempts, last_status, last_error, extract(epoch FROM next_attempt_at - now())::float8,
                            claimed_until IS NOT NULL, failed_at IS NOT NULL
                        FROM webhook_deliveries ORDER BY event_id DESC LIMIT 1
                        """
                    ).first?.decode((Int, Int?, String?, Double, Bool, Bool).self)
                }
                func attempted(_ count: Int) async throws {
                    try await waitUntil("attempt \(count)") {
                        guard let state = try await delivery() else { return false }
                        return state.attempts == count && !state.claimed
                    }
                }
                func makeDue() async throws {
                    try await db.client.query("UPDATE webhook_deliveries SET next_attempt_at = now() WHERE failed_at IS NULL")
                }

                receiver.script([.status(500), .hang, .close])
                try await click()
                // Long enough for the receiver's 500 to arrive on a machine busy with the whole suite
                // (a second was not: the 500 counted as a timeout); the hanging request waits it out.
                try await world.withDispatcher(timeout: .seconds(5)) {
                    try await attempted(1)
                    let first = try #require(try await delivery())
                    #expect(first.status == 500)
                    // The first retry waits 10 s, give or take a fifth.
                    #expect(first.dueIn > 7 && first.dueIn < 12.1, "\(first.dueIn)")
                    try await makeDue()
                    try await attempted(2)  // the receiver hangs: the request times out
                    #expect(try await delivery()?.status == nil)
                    #expect(try await delivery()?.dueIn ?? 0 > 20)
                    try await makeDue()
                    try await attempted(3)  // the receiver closes the connection
                    // The receiver is down: the same webhook pointed at a port nothing listens on. (Not a
                    // port the system handed out and took back: another test's server may be given it
                    // meanwhile and answer 404, which would make the delivery a dead letter.)
                    #expect(try await putWebhook(client, #"{"url":"http://127.0.0.1:1/hooks","events":["notification.clicked"]}"#).status == .ok)
                    try await attempted(4)
                    #expect(try await delivery()?.error != nil)
                    #expect(receiver.acceptedEvents.isEmpty)
                    // Back up: the replacement makes the waiting delivery due at once. An attempt that ran out
                    // of time before its request reached the receiver left its scripted answer unused; the
                    // receiver now answers 200 whatever is left.
                    receiver.script([])
                    #expect(try await putWebhook(client, define).status == .ok)
                    try await waitUntil("the event to arrive") { receiver.acceptedEvents.count == 1 }
                    try await waitUntil("the outbox to empty") { try await world.count("SELECT count(*) FROM webhook_deliveries") == 0 }
                    #expect((3...4).contains(receiver.requests.count), "\(receiver.requests.count)")

                    // A 4xx other than 408 and 429 is a dead letter, listed and resent on request.
                    receiver.script([.status(422)])
                    try await click()
                    try await waitUntil("the dead letter") { try await delivery()?.failed == true }
                    let failures = try jsonObject(try await client.execute(uri: "/v1/webhooks/backend/failures", method: .get, headers: admin))
                    let listed = try #require((failures["failures"] as? [[String: Any]])?.first)
                    #expect(listed["last_status"] as? Int == 422)
                    #expect((listed["event"] as? [String: Any])?["type"] as? String == "notification.clicked")
                    let resend = try await client.execute(uri: "/v1/webhooks/backend/failures/resend", method: .post, headers: admin)
                    #expect(try jsonObject(resend)["resent"] as? Int == 1)
                    try await waitUntil("the resent event") { receiver.acceptedEvents.count == 2 }

                    // Failing for longer than a day pauses the webhook; a PUT resumes it.
                    receiver.script([.status(503)])
                    try await click()
                    try await waitUntil("the failed attempt") { try await delivery()?.status == 503 }
                    try await db.client.query("UPDATE webhooks SET failing_since = now() - interval '25 hours'")
                    receiver.script([.status(503)])
                    try await makeDue()
                    try await waitUntil("the pause") {
                        (try jsonObject(try await client.execute(uri: "/v1/webhooks/backend", method: .get, headers: admin))["status"] as? String)
                            == "paused"
                    }
                    try await makeDue()
                    #expect(try await world.store.claim(lease: .seconds(1)) == nil, "a paused webhook is not claimed")
                    let resumed = try await putWebhook(client, define)
                    #expect(try jsonObject(resumed)["status"] as? String == "active")
                    try await waitUntil("the event after the pause") { receiver.acceptedEvents.count == 3 }
                }
            }
        }
    }
}

extension WebhookTests {
    /// `herald serve` killed (SIGKILL) while its requests hang at the receiver: a second process posts
    /// every event once the first one's claims lapse. Nothing is lost; what the first had posted may
    /// come twice (at least once), and the ids say so.
    @Test func aProcessKilledMidDeliveryLosesNothing() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await ReceiptsTests().seed(db)
            let receiver = try await WebhookReceiver.start()
            defer { Task { await receiver.shutdown() } }
            let secretKey = Hex.encode(SecureRandom.bytes(32))
            let store = WebhookStore(client: db.client, box: try SecretBox(hexKey: secretKey))
            _ = try await store.put(name: "backend", url: receiver.url, events: [.notificationClicked], secret: Self.secret, batchSize: 10)
            try await db.client.query(
                "SELECT herald_webhook_event('notification.clicked', jsonb_build_object('n', g)) FROM generate_series(1, 100) AS g"
            )
            receiver.script([.hang, .hang])
            let environment = db.heraldEnvironment.merging([
                "HERALD_ADMIN_TOKEN": Self.adminToken, "HERALD_SECRET_KEY": secretKey,
                "HERALD_WEBHOOK_TIMEOUT": "1s", "HERALD_LOG_LEVEL": "warning",
            ]) { $1 }
            let arguments = ["serve", "--port", "0", "--sql-dir", TestPostgres.repositoryRoot() + "/sql"]
            let first = try HeraldProcess(arguments: arguments, environment: environment)
            defer { first.signal(SIGKILL) }
            _ = try await first.waitForLine(containing: "Herald listening on")
            // Two batches are in flight (as many as go to one webhook at once), their requests hanging,
            // when the process dies.
            try await waitUntil("requests in flight") { receiver.requests.count >= 2 }
            first.signal(SIGKILL)
            _ = try await first.waitForExit()
            #expect(try await db.client.query("SELECT count(*) FROM webhook_deliveries WHERE claimed_until > now()")[0].decode(Int.self) > 0)

            let second = try HeraldProcess(arguments: arguments, environment: environment)
            defer { second.signal(SIGKILL) }
            _ = try await second.waitForLine(containing: "Herald listening on")
            try await waitUntil("every event") {
                Set(receiver.acceptedEvents.compactMap { ($0["data"] as? [String: Any])?["n"] as? Int }).count == 100
            }
            try await waitUntil("the outbox to empty") {
                // A request the receiver answered but the dispatcher gave up on after its 1 s timeout (a
                // loaded machine) waits out a retry's backoff, which this test is not about: due at once.
                try await db.client.query("UPDATE webhook_deliveries SET next_attempt_at = now() WHERE next_attempt_at > now()")
                return try await db.client.query("SELECT count(*) FROM webhook_events")[0].decode(Int.self) == 0
            }
            for request in receiver.requests {
                #expect(
                    WebhookSignature.verify(
                        header: request.header(WebhookSignature.headerName) ?? "",
                        secret: Array(Self.secret.utf8),
                        body: request.body
                    )
                )
            }
            second.signal(SIGTERM)
            #expect(try await second.waitForExit() == 0)
        }
    }

    /// A receiver that hangs holds at most two of the dispatcher's four requests: another webhook's
    /// events go out meanwhile.
    @Test func aHangingReceiverDoesNotHoldUpOtherWebhooks() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await world(db)
            let slow = try await WebhookReceiver.start()
            let fast = try await WebhookReceiver.start()
            defer {
                Task {
                    await slow.shutdown()
                    await fast.shutdown()
                }
            }
            slow.script([], otherwise: .hang)
            _ = try await world.store.put(name: "a-slow", url: slow.url, events: [.notificationClicked], secret: Self.secret, batchSize: 1)
            _ = try await world.store.put(name: "b-fast", url: fast.url, events: [.notificationViewed], secret: Self.secret, batchSize: 1)
            try await db.client.query(
                "SELECT herald_webhook_event('notification.clicked', jsonb_build_object('n', g)) FROM generate_series(1, 10) AS g"
            )
            try await world.withDispatcher(timeout: .seconds(20)) {
                try await waitUntil("the slow receiver's requests") { slow.requests.count == 2 }
                try await db.client.query(
                    "SELECT herald_webhook_event('notification.viewed', jsonb_build_object('n', g)) FROM generate_series(1, 5) AS g"
                )
                try await waitUntil("the other webhook's events") { fast.acceptedEvents.count == 5 }
                #expect(slow.requests.count == 2)
            }
        }
    }

    /// A claim takes at most the webhook's batch, whatever the planner believes of the backlog. With
    /// the statistics of a table that looks almost empty (new, not yet analysed), the batch's choice
    /// became the inner side of a nested loop and was scanned again for every delivery, each scan
    /// skipping what the update had just claimed: one claim took the whole backlog.
    @Test func aClaimTakesAtMostABatchWhateverThePlannerBelieves() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await world(db)
            _ = try await world.store.put(
                name: "backend",
                url: "http://127.0.0.1:1/hooks",
                events: [.notificationClicked],
                secret: Self.secret,
                batchSize: 5
            )
            try await db.client.query(
                "SELECT herald_webhook_event('notification.clicked', jsonb_build_object('n', g)) FROM generate_series(1, 300) AS g"
            )
            try await db.client.query("UPDATE pg_class SET reltuples = 1, relpages = 1 WHERE relname = 'webhook_deliveries'")
            try await db.client.query("DELETE FROM pg_statistic WHERE starelid = 'webhook_deliveries'::regclass")
            let batch = try #require(try await world.store.claim(lease: .seconds(60)))
            #expect(batch.events.count == 5)
            #expect(try await world.count("SELECT count(*) FROM webhook_deliveries WHERE claimed_until IS NOT NULL") == 5)
        }
    }

    /// Two dispatchers (as two replicas run them) share one webhook's backlog: every event arrives
    /// once, each batch claimed by one of them.
    @Test func twoDispatchersShareTheWorkWithoutPostingAnEventTwice() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await world(db)
            let receiver = try await WebhookReceiver.start()
            defer { Task { await receiver.shutdown() } }
            _ = try await world.store.put(name: "backend", url: receiver.url, events: [.notificationClicked], secret: Self.secret, batchSize: 5)
            try await db.client.query(
                "SELECT herald_webhook_event('notification.clicked', jsonb_build_object('n', g)) FROM generate_series(1, 300) AS g"
            )
            try await world.withDispatcher {
                try await world.withDispatcher {
                    try await waitUntil("every event") { receiver.acceptedEvents.count >= 300 }
                    try await waitUntil("the outbox to empty") { try await world.count("SELECT count(*) FROM webhook_events") == 0 }
                }
            }
            let numbers = receiver.acceptedEvents.compactMap { ($0["data"] as? [String: Any])?["n"] as? Int }
            #expect(numbers.count == 300)
            #expect(Set(numbers) == Set(1...300))
            #expect(receiver.requests.count == 60)
        }
    }
}
