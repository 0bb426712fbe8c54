import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldCrypto
import HeraldStore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Postgres
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// FCM and Web Push beside APNs, end to end through `herald serve`: devices registered over HTTP,
/// credentials uploaded over HTTP, notifications sent into the database, and the mock services
/// (real TLS and HTTP/2, FCM's OAuth checked, every Web Push payload decrypted) receiving what the
/// dispatcher's lanes send.
@Suite("Push services end to end", .serialized)
struct PushServicesTests {
    static let adminToken = "test-admin-token-services-0123456789"
    /// One service-account key for the suite: generating RSA keys is slow.
    static let key = RS256Key()
    static let projectID = "herald-android"
    static let email = "herald@herald-android.iam.gserviceaccount.com"
    static let topic = "com.example.herald"

    /// A running `herald serve` with the three mock services, and what the tests need of it.
    final class Served: Sendable {
        let db: TestDatabase
        let process: HeraldProcess
        let port: Int
        let apns: MockAPNsServer
        let fcm: MockFCMServer
        let webPush: MockWebPushService
        let sessions: [String: String]

        init(
            db: TestDatabase,
            process: HeraldProcess,
            port: Int,
            apns: MockAPNsServer,
            fcm: MockFCMServer,
            webPush: MockWebPushService,
            sessions: [String: String]
        ) {
            self.db = db
            self.process = process
            self.port = port
            self.apns = apns
            self.fcm = fcm
            self.webPush = webPush
            self.sessions = sessions
        }

        /// A request to the server; the status and the body as JSON (empty for none).
        @discardableResult
        func call(
            _ method: HTTPMethod,
            _ path: String,
            as user: String? = nil,
            admin: Bool = false,
            body: String? = nil,
            headers extra: [(String, String)] = []
        ) async throws -> (status: Int, json: [String: Any]) {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
            request.method = method
            if let user { request.headers.add(name: "Authorization", value: "Bearer \(sessions[user]!)") }
            if admin { request.headers.add(name: "Authorization", value: "Bearer \(PushServicesTests.adminToken)") }
            for (name, value) in extra { request.headers.add(name: name, value: value) }
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(string: body))
            }
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            let json = (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView)) as? [String: Any]) ?? [:]
            return (Int(response.status.code), json)
        }

        /// Registers a device through `POST /v1/me/devices`; returns its id.
        func register(_ user: String, _ body: String) async throws -> String {
            let (status, json) = try await call(.POST, "/v1/me/devices", as: user, body: body)
            try #require(status == 201, "registering \(body): \(status) \(json)")
            return try #require(json["id"] as? String)
        }

        /// A Web Push subscription to the mock, made with the server's VAPID key as a page makes it.
        func subscribe() async throws -> MockWebPushService.Subscription {
            let (status, json) = try await call(.GET, "/v1/webpush/key")
            try #require(status == 200)
            let key = try #require((json["public_key"] as? String).flatMap(Base64URL.decode))
            return webPush.subscribe(applicationServerKey: key)
        }

        /// Registers `subscription` for `user` with the body a browser's `toJSON()` makes.
        func register(_ user: String, subscription: MockWebPushService.Subscription) async throws -> String {
            try await register(
                user,
                #"{"service":"webpush","subscription":{"endpoint":"\#(subscription.endpoint)","expirationTime":null,"#
                    + #""keys":{"p256dh":"\#(subscription.p256dh)","auth":"\#(subscription.auth)"}}}"#
            )
        }

        /// Uploads an FCM credential named `name` for `key` in `projectID`.
        func uploadFCM(_ name: String, key: RS256Key = PushServicesTests.key, projectID: String = PushServicesTests.projectID) async throws {
            let file = MockFCMServer.keyFile(tokenURI: fcm.tokenURI, key: key, projectID: projectID, email: PushServicesTests.email)
            let (status, json) = try await call(.PUT, "/v1/fcm/credentials/\(name)", admin: true, body: String(decoding: file, as: UTF8.self))
            try #require(status == 201, "\(json)")
        }

        /// Sends a notification to `users` through the store (its transaction writes the outbox).
        @discardableResult
        func send(_ title: String, to users: [String], push: PushOptions = PushOptions()) async throws -> Int64 {
            try await sendThroughStore(db, title, to: users, push: push)
        }

        /// An alert's push options.
        static func alert(_ text: String) -> PushOptions {
            var push = PushOptions()
            push.alert = true
            push.text = text
            return push
        }

        /// Syncs the user's collection naming the device, as the app does on a push.
        func sync(_ user: String, device: String) async throws {
            let (status, _) = try await call(.GET, "/v1/me/channels/feed/collection", as: user, headers: [("Herald-Device", device)])
            try #require(status == 200)
        }

        func count(_ sql: String) async throws -> Int {
            try await db.client.query(PostgresQuery(unsafeSQL: sql))[0].decode(Int.self)
        }

        /// Waits until the dispatcher has nothing left to do: no outbox row, no want it could act on,
        /// no alert pending — so that a push not sent by now is one it decided not to send.
        func waitUntilSettled() async throws {
            try await waitUntil("the dispatcher to settle", timeout: .seconds(60)) {
                try await count(
                    """
                    SELECT (SELECT count(*) FROM push_outbox) + (SELECT count(*) FROM alert_outbox) + (SELECT count(*) FROM alert_pushes)
                        + (SELECT count(*) FROM device_push_state WHERE wanted_xid IS NOT NULL AND NOT outstanding)
                    """
                ) == 0
            }
        }

        func failures() async throws -> [[String: Any]] {
            try await call(.GET, "/v1/push/failures", admin: true).json["failures"] as? [[String: Any]] ?? []
        }

        func stop() async throws {
            process.signal(SIGTERM)
            #expect(try await process.waitForExit() == 0)
        }

        func shutdown() async {
            process.signal(SIGKILL)
            _ = try? await process.waitForExit()
            await apns.shutdown()
            await fcm.shutdown()
            await webPush.shutdown()
        }
    }

    /// Starts the mocks and `herald serve` over a database with a feed channel and `users`.
    static func withServed(_ db: TestDatabase, users: [String] = ["u1", "u2"], _ body: (Served) async throws -> Void) async throws {
        _ = try await ChannelStore(client: db.client).put(
            HeraldCore.Channel(url: "feed", kind: .feed, name: "Feed", categories: [.init(id: "news", name: "News", isDefault: true)])
        )
        _ = try await TemplateStore(client: db.client).put(.plain)
        var sessions: [String: String] = [:]
        for user in users {
            _ = try await UserStore(client: db.client).upsert(id: user, nickname: nil, profileURL: nil)
            sessions[user] = try #require(try await SessionStore(client: db.client).create(userID: user, lifetime: 3600)).token.text
        }
        let credentials = TestCredentials.shared
        let signing = try P256Key(pem: credentials.signingKeyPEM)
        let apns = try await MockAPNsServer.start(
            authentication: .token(publicKeyPEM: signing.publicKeyPEM, keyID: credentials.keyID, teamID: credentials.teamID)
        )
        let fcm = try await MockFCMServer.start(publicKeyPEM: key.publicKeyPEM, clientEmail: email, keyID: "key-1", projectID: projectID)
        let webPush = try await MockWebPushService.start()
        let environment = db.heraldEnvironment.merging([
            "HERALD_SECRET_KEY": Hex.encode(SecureRandom.bytes(32)), "HERALD_ADMIN_TOKEN": adminToken,
            "HERALD_APNS_URL": apns.baseURL, "HERALD_APNS_CA_FILE": credentials.serverCertificateFile,
            "HERALD_FCM_URL": fcm.baseURL, "HERALD_PUSH_CA_FILE": credentials.serverCertificateFile,
            "HERALD_VAPID_SUBJECT": "mailto:ops@example.com", "HERALD_WEBPUSH_HOSTS": "127.0.0.1", "HERALD_REFRESH_MIN_INTERVAL": "0s",
            "HERALD_LOG_LEVEL": "info",
        ]) { $1 }
        let process = try HeraldProcess(
            arguments: ["serve", "--port", "0", "--sql-dir", TestPostgres.repositoryRoot() + "/sql"],
            environment: environment
        )
        let line = try await process.waitForLine(containing: "Herald listening on")
        let served = Served(
            db: db,
            process: process,
            port: try #require(line.split(separator: ":").last.flatMap { Int($0) }),
            apns: apns,
            fcm: fcm,
            webPush: webPush,
            sessions: sessions
        )
        do {
            try await body(served)
        } catch {
            await served.shutdown()
            throw error
        }
        await served.shutdown()
    }

    static func userKey(_ db: TestDatabase, _ id: String) async throws -> Int64 {
        try await db.client.query("SELECT key FROM users WHERE id = \(id)")[0].decode(Int64.self)
    }

    /// The `herald` object an FCM data message carries as JSON text.
    static func herald(_ message: MockFCMServer.Message) -> [String: Any] {
        let text = (message.object["data"] as? [String: Any])?["herald"] as? String ?? ""
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
    }

    /// An Android device gets one data message at normal priority, collapsed per user, until it syncs;
    /// an alert comes as a notification message at high priority to whoever's preferences let it
    /// through; FCM's UNREGISTERED removes the device and lists the failure.
    @Test func fcmDevicesGetRefreshesUntilTheySyncAlertsAndAreRemovedWhenUnregistered() async throws {
        try await TestPostgres.withDatabase(cluster: .pushServices) { (db: TestDatabase) async throws in
            try await Self.withServed(db) { served in
                try await served.uploadFCM("main")
                let listed = try await served.call(.GET, "/v1/fcm/credentials", admin: true).json
                let credential = try #require((listed["credentials"] as? [[String: Any]])?.first)
                #expect(credential["project_id"] as? String == Self.projectID && credential["status"] as? String == "ready")
                #expect(!"\(listed)".contains("PRIVATE KEY"))

                let (token1, token2) = ("fcm-token-of-u1:APA91b" + String(repeating: "x", count: 120), "fcm-token-of-u2:APA91b-quiet")
                let device1 = try await served.register("u1", #"{"service":"fcm","token":"\#(token1)"}"#)
                _ = try await served.register("u2", #"{"service":"fcm","token":"\#(token2)","project_id":"\#(Self.projectID)"}"#)
                // Registering again (every app launch does) is a 200 with the same device.
                let again = try await served.call(.POST, "/v1/me/devices", as: "u1", body: #"{"service":"fcm","token":"\#(token1)"}"#)
                #expect(again.status == 200 && again.json["id"] as? String == device1 && again.json["service"] as? String == "fcm")
                #expect(try await served.call(.PUT, "/v1/me/push-preferences", as: "u2", body: #"{"push_trigger_option":"off"}"#).status == 200)

                try await served.send("one", to: ["u1", "u2"])
                try await waitUntil("a refresh to each device") { Set(served.fcm.messages.map(\.token)) == [token1, token2] }
                let refresh = try #require(served.fcm.messages.first { $0.token == token1 })
                let android = try #require(refresh.object["android"] as? [String: Any])
                #expect(android["priority"] as? String == "NORMAL")
                #expect(android["collapse_key"] as? String == "herald-refresh-\(try await Self.userKey(db, "u1"))")
                #expect(refresh.object["notification"] == nil)
                #expect(Self.herald(refresh)["type"] as? String == "refresh")
                #expect((Self.herald(refresh)["channels"] as? [[String: Any]])?.first?["channel_url"] as? String == "feed")

                // Outstanding: a second change brings no second push until the device syncs.
                try await served.send("two", to: ["u1"])
                try await served.waitUntilSettled()
                #expect(served.fcm.messages.filter { $0.token == token1 }.count == 1)
                try await served.sync("u1", device: device1)
                try await served.send("three", to: ["u1"])
                try await waitUntil("the refresh after the sync") { served.fcm.messages.filter { $0.token == token1 }.count == 2 }

                // An alert: a notification message at high priority, for u1 only (u2 turned alerts off).
                try await served.sync("u1", device: device1)
                try await served.send("four", to: ["u1", "u2"], push: Served.alert("Hello from Herald"))
                try await waitUntil("the alert") { served.fcm.messages.contains { $0.token == token1 && $0.object["notification"] != nil } }
                try await served.waitUntilSettled()
                let alert = try #require(served.fcm.messages.last { $0.token == token1 && $0.object["notification"] != nil })
                #expect((alert.object["notification"] as? [String: Any])?["body"] as? String == "Hello from Herald")
                #expect((alert.object["android"] as? [String: Any])?["priority"] as? String == "HIGH")
                #expect(Self.herald(alert)["message"] as? String == "Hello from Herald")
                #expect(!served.fcm.messages.contains { $0.token == token2 && $0.object["notification"] != nil })

                // UNREGISTERED: the device goes, and the failure is listed as FCM's.
                served.fcm.script(token1, [.error(status: 404, code: "UNREGISTERED")])
                try await served.sync("u1", device: device1)
                try await served.send("five", to: ["u1"])
                try await waitUntil("the device's removal") { try await served.count("SELECT count(*) FROM devices WHERE token = '\(token1)'") == 0 }
                let failure = try #require(try await served.failures().first)
                #expect(failure["service"] as? String == "fcm" && failure["token_removed"] as? Bool == true)
                #expect(failure["reason"] as? String == "UNREGISTERED")
                try await served.stop()
            }
        }
    }

    /// A browser's subscription gets its refreshes and alerts encrypted for it (the mock decrypts
    /// them), signed with the server's VAPID key, with the headers that coalesce and prioritize them;
    /// a subscription the push service calls gone (410) is removed.
    @Test func webPushSubscriptionsGetEncryptedRefreshesAndAlertsAndGoWhenGone() async throws {
        try await TestPostgres.withDatabase(cluster: .pushServices) { (db: TestDatabase) async throws in
            try await Self.withServed(db) { served in
                let subscription = try await served.subscribe()
                let device = try await served.register("u1", subscription: subscription)
                let listed = try await served.call(.GET, "/v1/me/devices", as: "u1").json
                let registered = try #require((listed["devices"] as? [[String: Any]])?.first)
                #expect(registered["service"] as? String == "webpush" && registered["device_token"] as? String == subscription.endpoint)

                try await served.send("one", to: ["u1"])
                try await waitUntil("the refresh") { served.webPush.pushes.count == 1 }
                let refresh = served.webPush.pushes[0]
                #expect(refresh.status == 201)
                #expect((refresh.object["herald"] as? [String: Any])?["type"] as? String == "refresh")
                #expect(refresh.object["aps"] == nil)
                #expect(refresh.headers["urgency"] == "normal")
                #expect(refresh.headers["topic"]?.count == 32)
                #expect((refresh.headers["ttl"].flatMap(Int.init) ?? 0) > 3000)

                try await served.sync("u1", device: device)
                try await served.send("two", to: ["u1"], push: Served.alert("Hello, browser"))
                try await waitUntil("the alert") { served.webPush.pushes.contains { $0.object["notification"] != nil } }
                let alert = try #require(served.webPush.pushes.first { $0.object["notification"] != nil })
                #expect((alert.object["notification"] as? [String: Any])?["body"] as? String == "Hello, browser")
                #expect((alert.object["herald"] as? [String: Any])?["message"] as? String == "Hello, browser")
                #expect(alert.headers["urgency"] == "high")

                // Nothing of the second send is left to push (its refresh may still be due after the
                // alert): a push to the revoked subscription would remove the device before the sync.
                try await waitUntil("the second send's pushes") {
                    try await served.count(
                        "SELECT (SELECT count(*) FROM device_push_state WHERE wanted_xid IS NOT NULL AND NOT outstanding) + (SELECT count(*) FROM alert_pushes)"
                    ) == 0
                }
                // The user revoked the permission: the push service answers 410 and the device goes.
                served.webPush.unsubscribe(subscription)
                try await served.sync("u1", device: device)
                try await served.send("three", to: ["u1"])
                try await waitUntil("the subscription's removal") { try await served.count("SELECT count(*) FROM devices") == 0 }
                let failure = try #require(try await served.failures().first)
                #expect(failure["service"] as? String == "webpush" && failure["status"] as? Int == 410)
                try await served.stop()
            }
        }
    }

    /// 429 and 5xx are retried after the service's `Retry-After` — sooner than the throttle backoff
    /// (60 s) and later than the transient one (2 s ± 20 %) — and then delivered.
    @Test func retriesWaitForTheServicesRetryAfter() async throws {
        try await TestPostgres.withDatabase(cluster: .pushServices) { (db: TestDatabase) async throws in
            try await Self.withServed(db) { served in
                try await served.uploadFCM("main")
                let token = "fcm-token-throttled:APA91b-0123456789"
                _ = try await served.register("u1", #"{"service":"fcm","token":"\#(token)"}"#)
                served.fcm.script(token, [.error(status: 429, code: "QUOTA_EXCEEDED", retryAfter: 3)])
                let subscription = try await served.subscribe()
                _ = try await served.register("u2", subscription: subscription)
                served.webPush.script(subscription, [(status: 503, retryAfter: 4)])

                try await served.send("one", to: ["u1", "u2"])
                try await waitUntil("both retries delivered", timeout: .seconds(60)) {
                    served.fcm.messages.count == 2 && served.webPush.pushes.filter { $0.status == 201 }.count == 1
                }
                let (first, second) = (served.fcm.messages[0], served.fcm.messages[1])
                #expect(second.receivedAt.timeIntervalSince(first.receivedAt) >= 2.9)
                #expect(second.receivedAt.timeIntervalSince(first.receivedAt) < 30)
                let pushes = served.webPush.pushes
                #expect(pushes.count == 2 && pushes[0].status == 503)
                #expect(pushes[1].receivedAt.timeIntervalSince(pushes[0].receivedAt) >= 3.9)
                #expect(try await served.failures().isEmpty)
                try await served.stop()
            }
        }
    }

    /// One service stalled (FCM holds every message) holds back its own lane only: APNs and Web Push
    /// deliver meanwhile, and FCM's pushes go once it answers. A credential that does not
    /// authenticate fails its pushes with a listed reason while the other credential's deliver.
    /// Erasing a user removes their devices of every service.
    @Test func aStalledServiceOrABadCredentialHoldsBackOnlyItsOwnPushes() async throws {
        try await TestPostgres.withDatabase(cluster: .pushServices) { (db: TestDatabase) async throws in
            try await Self.withServed(db, users: ["u1", "u2", "u3"]) { served in
                let credentials = TestCredentials.shared
                let apnsCredential = try await served.call(
                    .PUT,
                    "/v1/apns/credentials/main",
                    admin: true,
                    body: String(
                        decoding: try JSONSerialization.data(withJSONObject: [
                            "type": "token", "environment": "sandbox", "topic": Self.topic, "key": credentials.signingKeyPEM,
                            "key_id": credentials.keyID, "team_id": credentials.teamID,
                        ]),
                        as: UTF8.self
                    )
                )
                #expect(apnsCredential.status == 201)
                try await served.uploadFCM("main")
                let apnsToken = String(format: "%064x", 0xB001)
                let fcmToken = "fcm-token-stalled:APA91b-0123456789"
                _ = try await served.register("u1", #"{"service":"apns","token":"\#(apnsToken)","environment":"sandbox","topic":"\#(Self.topic)"}"#)
                _ = try await served.register("u1", #"{"service":"fcm","token":"\#(fcmToken)"}"#)
                let subscription = try await served.subscribe()
                _ = try await served.register("u1", subscription: subscription)

                served.fcm.gate.close()
                try await served.send("one", to: ["u1"])
                try await waitUntil("APNs and Web Push to deliver while FCM is stalled", timeout: .seconds(60)) {
                    served.apns.requests.contains { $0.status == 200 } && served.webPush.pushes.contains { $0.status == 201 }
                        && served.fcm.gate.arrivedWhileClosed >= 1
                }
                #expect(served.fcm.messages.isEmpty)
                served.fcm.gate.open()
                try await waitUntil("FCM's push once it answers") { served.fcm.messages.count == 1 }

                // A second FCM credential whose key the token endpoint refuses: its project's device
                // fails with the reason listed, while the first credential's device is delivered.
                let otherProject = "herald-other"
                try await served.uploadFCM("other", key: RS256Key(), projectID: otherProject)
                let otherToken = "fcm-token-other-project:APA91b-0123456789"
                _ = try await served.register("u2", #"{"service":"fcm","token":"\#(otherToken)","project_id":"\#(otherProject)"}"#)
                let goodToken = "fcm-token-good-project:APA91b-0123456789"
                _ = try await served.register("u3", #"{"service":"fcm","token":"\#(goodToken)"}"#)
                try await served.send("two", to: ["u2", "u3"])
                try await waitUntil("the bad credential's failure and the good one's delivery") {
                    let listed = try await served.failures()
                    return served.fcm.messages.contains { $0.token == goodToken }
                        && listed.contains { ($0["reason"] as? String)?.contains("FCM credential 'other'") == true }
                }
                #expect(served.fcm.refusedAssertions >= 1)
                #expect(try await served.count("SELECT count(*) FROM devices WHERE token = '\(otherToken)'") == 1)

                let metrics = try await HTTPClient.shared.execute(
                    HTTPClientRequest(url: "http://127.0.0.1:\(served.port)/metrics"),
                    timeout: .seconds(30)
                )
                let text = String(buffer: try await metrics.body.collect(upTo: 1 << 22))
                for service in ["apns", "fcm", "webpush"] {
                    #expect(text.split(separator: "\n").contains { $0.hasPrefix("herald_pushes_total{") && $0.contains(#"service="\#(service)""#) })
                }

                // Erasure: u1's devices of all three services go with the user.
                #expect(
                    try await served.count("SELECT count(DISTINCT service) FROM devices d JOIN users u ON u.key = d.user_key WHERE u.id = 'u1'") == 3
                )
                #expect(try await served.call(.DELETE, "/v1/users/u1", admin: true).status == 202)
                try await waitUntil("u1's devices to go") {
                    try await served.count("SELECT count(*) FROM devices WHERE token IN ('\(apnsToken)', '\(fcmToken)', '\(subscription.endpoint)')")
                        == 0
                }
                try await served.stop()
            }
        }
    }

    /// Users a throttle that drops leaves without a copy are counted in `herald_copies_dropped_total`:
    /// at a send to listed users and in the fan-out of a send to everyone.
    @Test func copiesAThrottleDropsAreCountedInTheMetrics() async throws {
        try await TestPostgres.withDatabase(cluster: .pushServices) { (db: TestDatabase) async throws in
            try await Self.withServed(db, users: ["u1", "u2", "u3"]) { served in
                func send(_ title: String, _ audience: String) async throws {
                    let (status, json) = try await served.call(
                        .POST,
                        "/v1/notifications",
                        admin: true,
                        body: #"{"channel_url": "feed", "template_key": "plain", "variables": {"title": "\#(title)"}, \#(audience), "#
                            + #""throttle": {"limit": 1, "window": "1h", "beyond": "drop"}}"#
                    )
                    try #require(status < 300, "\(json)")
                }
                func dropped() async throws -> Int? {
                    let response = try await HTTPClient.shared.execute(
                        HTTPClientRequest(url: "http://127.0.0.1:\(served.port)/metrics"),
                        timeout: .seconds(30)
                    )
                    let text = String(buffer: try await response.body.collect(upTo: 1 << 22))
                    return text.split(separator: "\n").first { $0.hasPrefix("herald_copies_dropped_total ") }
                        .flatMap { $0.split(separator: " ").last }.flatMap { Int($0) }
                }
                // u1 reaches the cap of one; the next send to u1 and u2 drops u1's copy.
                try await send("one", #""targets": ["u1"]"#)
                try await send("two", #""targets": ["u1", "u2"]"#)
                #expect(try await dropped() == 1)
                // Everyone: u1 and u2 are at the cap, u3 is not; the fan-out drops two more.
                try await send("three", #""audience": "all""#)
                try await waitUntil("the fan-out's drops to be counted") { try await dropped() == 3 }
                #expect(try await served.count("SELECT count(*) FROM notification_events WHERE kind = 4") == 3)
                #expect(
                    try await served.count("SELECT count(*) FROM notification_recipients r JOIN users u ON u.key = r.user_key WHERE u.id = 'u3'") == 1
                )
                try await served.stop()
            }
        }
    }

    /// `POST /v1/me/devices` checks each service's fields and names the one that is wrong; nothing is
    /// stored from a refused body.
    @Test func registrationsAreCheckedFieldByField() async throws {
        try await TestPostgres.withDatabase(cluster: .pushServices) { (db: TestDatabase) async throws in
            try await Self.withServed(db) { served in
                let apnsToken = String(repeating: "ab", count: 32)
                let refused: [(body: String, mentions: String)] = [
                    (#"{}"#, "service"),
                    (#"{"service":"sms","token":"x"}"#, "service"),
                    (#"{"service":"apns","token":"xyz","environment":"sandbox","topic":"com.example"}"#, "token"),
                    (#"{"service":"apns","token":"\#(apnsToken)","environment":"staging","topic":"com.example"}"#, "environment"),
                    (#"{"service":"apns","token":"\#(apnsToken)","environment":"sandbox"}"#, "topic"),
                    (#"{"service":"fcm","token":"short"}"#, "token"),
                    (#"{"service":"fcm","token":"fcm-token-with space-0123456789"}"#, "token"),
                    (#"{"service":"fcm","token":"fcm-token:APA91b-0123456789","project_id":"Not A Project"}"#, "project_id"),
                    (#"{"service":"fcm","token":"fcm-token:APA91b-0123456789","environment":"sandbox"}"#, "environment"),
                    (#"{"service":"webpush","subscription":{"endpoint":"http://push.example/x","keys":{"p256dh":"AA","auth":"AA"}}}"#, "endpoint"),
                    (
                        #"{"service":"webpush","subscription":{"endpoint":"https://push.example/x","keys":{"p256dh":"AAAA","auth":"AAAAAAAAAAAAAAAAAAAAAA"}}}"#,
                        "keys.p256dh"
                    ),
                    (#"{"service":"webpush","token":"https://push.example/x"}"#, "token"),
                    (#"{"service":"fcm","token":"fcm-token:APA91b-0123456789","extra":1}"#, "extra"),
                    (#"{"service":"fcm","token":"\#(String(repeating: "x", count: 1_025))"}"#, "token"),
                ]
                for (body, field) in refused {
                    let (status, json) = try await served.call(.POST, "/v1/me/devices", as: "u1", body: body)
                    let error = json["error"] as? [String: Any]
                    #expect(status == 400, "\(body)")
                    #expect((error?["message"] as? String)?.contains(field) == true, "\(body): \(json)")
                }
                // A subscription with a valid point but a short auth secret names keys.auth.
                let subscription = try await served.subscribe()
                let shortAuth = try await served.call(
                    .POST,
                    "/v1/me/devices",
                    as: "u1",
                    body:
                        #"{"service":"webpush","subscription":{"endpoint":"\#(subscription.endpoint)","keys":{"p256dh":"\#(subscription.p256dh)","auth":"AAAA"}}}"#
                )
                #expect(shortAuth.status == 400 && "\(shortAuth.json)".contains("keys.auth"))
                // A subscription at a host that is no push service this server sends to (an address
                // inside the operator's network, say) is refused.
                let elsewhere = try await served.call(
                    .POST,
                    "/v1/me/devices",
                    as: "u1",
                    body:
                        #"{"service":"webpush","subscription":{"endpoint":"https://intranet.example/admin","keys":{"p256dh":"\#(subscription.p256dh)","auth":"\#(subscription.auth)"}}}"#
                )
                #expect(elsewhere.status == 400 && "\(elsewhere.json)".contains("subscription.endpoint is not at a push service"))
                #expect(try await served.count("SELECT count(*) FROM devices") == 0)

                // A device is removed by its id, whatever its service.
                let id = try await served.register("u1", subscription: subscription)
                #expect(try await served.call(.DELETE, "/v1/me/devices/\(id)", as: "u2").status == 404)
                #expect(try await served.call(.DELETE, "/v1/me/devices/\(id)", as: "u1").status == 204)
                #expect(try await served.count("SELECT count(*) FROM devices") == 0)

                // A new VAPID key takes every browser subscription with the old one (their push services
                // would refuse it): the pages subscribe again, with the key now served.
                _ = try await served.register("u1", subscription: subscription)
                let replacement = P256Key()
                let replaced = try await served.call(
                    .PUT,
                    "/v1/webpush/key",
                    admin: true,
                    body: #"{"private_key":\#(JSONString.quoted(replacement.pem))}"#
                )
                #expect(replaced.status == 200 && replaced.json["public_key"] as? String == Base64URL.encode(replacement.publicPoint))
                #expect(!"\(replaced.json)".contains("PRIVATE KEY"))
                #expect(try await served.count("SELECT count(*) FROM devices WHERE service = 'webpush'") == 0)
                #expect(try await served.call(.GET, "/v1/webpush/key").json["public_key"] as? String == Base64URL.encode(replacement.publicPoint))

                // A key file that is not one is refused, naming the field.
                let bad = try await served.call(.PUT, "/v1/fcm/credentials/main", admin: true, body: #"{"type":"service_account"}"#)
                #expect(bad.status == 400 && "\(bad.json)".contains("project_id"))
                try await served.stop()
            }
        }
    }
}
