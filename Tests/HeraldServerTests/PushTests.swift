import APNs
import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Postgres
import Prometheus
import Testing

@testable import HeraldServer
@testable import HeraldServices

/// Devices, APNs credentials and silent refresh pushes through the outbox, against a mock APNs.
///
/// The dispatcher's rounds are driven by the tests (`runRound()`), so every step is deterministic:
/// no background loop, no waiting for time to pass. Retry delays are zero or made to pass by moving
/// `next_attempt_at` in the database. Horizon-sensitive (a sync answers the wants its snapshot
/// covers), so the suite runs on a cluster of its own, one test at a time.
@Suite("Push", .serialized, .timeLimit(.minutes(3)))
struct PushTests {
    static let adminToken = "test-admin-token-push-0123456789"
    static let credentials = TestCredentials.shared
    static let topic = "com.example.herald"

    final class World: Sendable {
        let db: TestDatabase
        let mock: MockAPNsServer
        let box: SecretBox
        let settings: PushSettings
        let transport: APNsTransport
        let dispatcher: PushDispatcher
        let sessions: [String: String]

        /// The key sealing the credentials, as `HERALD_SECRET_KEY` takes it.
        let secretKeyHex: String

        init(db: TestDatabase, mock: MockAPNsServer, settings: PushSettings, sessions: [String: String]) throws {
            self.db = db
            self.mock = mock
            self.settings = settings
            self.sessions = sessions
            secretKeyHex = Hex.encode(SecureRandom.bytes(32))
            box = try SecretBox(hexKey: secretKeyHex)
            transport = APNsTransport(store: APNsCredentialStore(client: db.client, box: box), settings: settings, logger: Logger(label: "test.push"))
            dispatcher = PushDispatcher(
                client: db.client,
                transports: [transport],
                settings: settings,
                listener: nil,
                logger: Logger(label: "test.push")
            )
        }

        func app() throws -> some ApplicationProtocol {
            Application(router: HeraldApplication.buildRouter(try heraldDependencies(db, adminToken: PushTests.adminToken, secrets: box)).router)
        }

        /// Sends a notification to `users` through the store (the same transaction writes the outbox).
        @discardableResult
        func send(_ title: String, to users: [String], push: PushOptions = PushOptions()) async throws -> Int64 {
            try await sendThroughStore(db, title, to: users, push: push)
        }

        /// Rounds until one finds no work; returns how many found work.
        @discardableResult
        func drain() async throws -> Int {
            var rounds = 0
            while try await dispatcher.runRound() {
                rounds += 1
                if rounds > 50 { break }
            }
            return rounds
        }

        @discardableResult
        func query(_ sql: String) async throws -> PostgresResult {
            try await db.client.query(PostgresQuery(unsafeSQL: sql))
        }

        func shutdown() async {
            await transport.shutdown()
            await mock.shutdown()
        }
    }

    static func token(_ index: Int) -> String { String(format: "%064x", 0xA000 + index) }

    /// Uploads the test signing key as the sandbox token credential `name` for `topic`.
    static func uploadTokenCredential(_ client: some TestClientProtocol, name: String, topic: String) async throws -> TestResponse {
        try await client.execute(
            uri: "/v1/apns/credentials/\(name)",
            method: .put,
            headers: jsonHeaders(bearer: adminToken),
            body: ByteBuffer(
                bytes: try JSONSerialization.data(withJSONObject: [
                    "type": "token", "environment": "sandbox", "topic": topic, "key": credentials.signingKeyPEM,
                    "key_id": credentials.keyID, "team_id": credentials.teamID,
                ])
            )
        )
    }

    /// A world with a feed channel, users with sessions, a token credential uploaded through the API,
    /// and `devices` registered per user through the API.
    func world(
        _ db: TestDatabase,
        users: [String] = ["u1", "u2"],
        devices: [String: [String]] = [:],
        configure: (inout PushSettings) -> Void = { _ in }
    ) async throws -> World {
        _ = try await ChannelStore(client: db.client).put(
            HeraldCore.Channel(url: "feed", kind: .feed, name: "Feed", categories: [.init(id: "news", name: "News", isDefault: true)])
        )
        _ = try await TemplateStore(client: db.client).put(.plain)
        var sessions: [String: String] = [:]
        for user in users {
            _ = try await UserStore(client: db.client).upsert(id: user, nickname: nil, profileURL: nil)
            sessions[user] = try #require(try await SessionStore(client: db.client).create(userID: user, lifetime: 3600)).token.text
        }
        let key = try P256Key(pem: Self.credentials.signingKeyPEM)
        let mock = try await MockAPNsServer.start(
            authentication: .token(publicKeyPEM: key.publicKeyPEM, keyID: Self.credentials.keyID, teamID: Self.credentials.teamID)
        )
        var settings = PushSettings()
        settings.apnsURL = mock.baseURL
        settings.apnsCAFile = mock.trustRootFile
        settings.minimumInterval = .zero
        settings.retryDelay = .zero
        // Generous: the debug-built mock is slow when the machine is busy; a timeout would be retried
        // and show up as an extra request.
        settings.requestTimeout = .seconds(30)
        configure(&settings)
        let world = try World(db: db, mock: mock, settings: settings, sessions: sessions)
        let sessionsByUser = sessions
        try await world.app().test(.router) { client in
            let upload = try await Self.uploadTokenCredential(client, name: "main", topic: Self.topic)
            #expect(upload.status == .created, "\(String(buffer: upload.body))")
            for (user, tokens) in devices {
                for token in tokens {
                    let response = try await client.execute(
                        uri: "/v1/me/devices/\(token)",
                        method: .put,
                        headers: jsonHeaders(bearer: sessionsByUser[user]),
                        body: ByteBuffer(string: #"{"environment":"sandbox","topic":"\#(Self.topic)"}"#)
                    )
                    #expect(response.status == .created, "\(String(buffer: response.body))")
                }
            }
        }
        return world
    }

    // MARK: - Devices

    @Test func devicesRegisterListMoveAndKeepAtMostTwenty() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db)
            defer { Task { await world.shutdown() } }
            try await world.app().test(.router) { client in
                func register(_ user: String, _ token: String, unique: Bool = false) async throws -> TestResponse {
                    try await client.execute(
                        uri: "/v1/me/devices/\(token)",
                        method: .put,
                        headers: jsonHeaders(bearer: world.sessions[user]),
                        body: ByteBuffer(string: #"{"environment":"sandbox","topic":"\#(Self.topic)","unique":\#(unique)}"#)
                    )
                }
                func list(_ user: String) async throws -> [String] {
                    let response = try await client.execute(uri: "/v1/me/devices", method: .get, headers: jsonHeaders(bearer: world.sessions[user]))
                    return (try jsonObject(response)["devices"] as? [[String: Any]] ?? []).compactMap { $0["device_token"] as? String }
                }
                // A new device is 201; registering it again (an app does on every launch) 200.
                for index in 0..<22 { #expect(try await register("u1", Self.token(index)).status == .created) }
                #expect(try await register("u1", Self.token(21)).status == .ok)
                let listed = try await list("u1")
                #expect(listed.count == 20)
                #expect(listed.first == Self.token(21))
                #expect(!listed.contains(Self.token(0)) && !listed.contains(Self.token(1)))  // the oldest two went

                // A token another user registers moves to them: new to them, so 201.
                #expect(try await register("u2", Self.token(21)).status == .created)
                #expect(try await list("u2") == [Self.token(21)])
                #expect(!(try await list("u1")).contains(Self.token(21)))

                // unique: the user's other tokens go.
                #expect(try await register("u1", Self.token(30), unique: true).status == .created)
                #expect(try await list("u1") == [Self.token(30)])

                // Uppercase is the same token; bad tokens and bodies are 400s.
                #expect(try await register("u1", Self.token(30).uppercased()).status == .ok)
                #expect(try await list("u1") == [Self.token(30)])
                for bad in ["abc", String(repeating: "zz", count: 32), String(repeating: "a", count: 63), String(repeating: "ab", count: 201)] {
                    let response = try await register("u1", bad)
                    #expect(response.status == .badRequest)
                    #expect(try errorCode(response) == "invalid_device_token")
                }
                let badBody = try await client.execute(
                    uri: "/v1/me/devices/\(Self.token(40))",
                    method: .put,
                    headers: jsonHeaders(bearer: world.sessions["u1"]),
                    body: ByteBuffer(string: #"{"environment":"staging","topic":"\#(Self.topic)"}"#)
                )
                #expect(badBody.status == .badRequest)
                #expect(try errorCode(badBody) == "invalid_device")

                // Unregister one, then all.
                #expect(
                    try await client.execute(
                        uri: "/v1/me/devices/\(Self.token(30))",
                        method: .delete,
                        headers: jsonHeaders(bearer: world.sessions["u1"])
                    ).status == .noContent
                )
                #expect(
                    try await client.execute(
                        uri: "/v1/me/devices/\(Self.token(30))",
                        method: .delete,
                        headers: jsonHeaders(bearer: world.sessions["u1"])
                    ).status == .notFound
                )
                _ = try await register("u2", Self.token(31))
                let all = try await client.execute(uri: "/v1/me/devices", method: .delete, headers: jsonHeaders(bearer: world.sessions["u2"]))
                #expect(try jsonObject(all)["removed"] as? Int == 2)
                #expect(try await list("u2").isEmpty)
            }
        }
    }

    // MARK: - Credentials

    @Test func credentialsAreCheckedSealedAndNeverReturned() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db)
            defer { Task { await world.shutdown() } }
            try await world.app().test(.router) { client in
                func put(_ name: String, _ body: [String: Any]) async throws -> TestResponse {
                    try await client.execute(
                        uri: "/v1/apns/credentials/\(name)",
                        method: .put,
                        headers: jsonHeaders(bearer: Self.adminToken),
                        body: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body))
                    )
                }
                let p12 = Data(Self.credentials.p12).base64EncodedString()
                let certificate = try await put(
                    "cert",
                    ["type": "certificate", "environment": "production", "p12": p12, "password": Self.credentials.certificatePassword]
                )
                #expect(certificate.status == .created, "\(String(buffer: certificate.body))")
                #expect(try jsonObject(certificate)["topic"] as? String == Self.credentials.certificateTopic)
                #expect(try jsonObject(certificate)["certificate_expires_at"] is String)

                let wrongPassword = try await put("cert2", ["type": "certificate", "environment": "production", "p12": p12, "password": "nope"])
                #expect(wrongPassword.status == .badRequest)
                #expect(String(buffer: wrongPassword.body).contains("password"))
                let badKey = try await put(
                    "bad",
                    [
                        "type": "token", "environment": "sandbox", "topic": Self.topic,
                        "key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", "key_id": "ABC123DEFG", "team_id": "TEAM123456",
                    ]
                )
                #expect(badKey.status == .badRequest)
                #expect(try errorCode(badKey) == "invalid_credential")
                let badKeyID = try await put(
                    "bad",
                    [
                        "type": "token", "environment": "sandbox", "topic": Self.topic, "key": Self.credentials.signingKeyPEM, "key_id": "x\"y",
                        "team_id": "TEAM123456",
                    ]
                )
                #expect(badKeyID.status == .badRequest)

                let list = try await client.execute(uri: "/v1/apns/credentials", method: .get, headers: jsonHeaders(bearer: Self.adminToken))
                let text = String(buffer: list.body)
                #expect((try jsonObject(list)["credentials"] as? [[String: Any]])?.count == 2)
                #expect(!text.contains("PRIVATE KEY") && !text.contains(p12.prefix(40)) && !text.contains(Self.credentials.certificatePassword))
            }
            // At rest: neither the key's text nor the password appears in the stored bytes.
            let stored = try await world.query("SELECT secret, password FROM apns_credentials ORDER BY name")
            for row in stored {
                let secret = try row.decode(column: 0, as: PostgresBytes.self).bytes
                #expect(!String(decoding: secret, as: UTF8.self).contains("PRIVATE KEY"))
                #expect(secret != Self.credentials.p12)
                if let password = try row.decode(column: 1, as: PostgresBytes?.self) {
                    #expect(!String(decoding: password.bytes, as: UTF8.self).contains(Self.credentials.certificatePassword))
                }
            }
        }
    }

    // MARK: - Silent pushes

    @Test func aNotificationSendsOneExactSilentPushPerDevice() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, devices: ["u1": [Self.token(1), Self.token(2)]])
            defer { Task { await world.shutdown() } }
            let sentAt = Int64(Date().timeIntervalSince1970)
            let id = try await world.send("hello", to: ["u1", "u2"])
            #expect(try await world.drain() >= 1)
            let drainedAt = Int64(Date().timeIntervalSince1970)
            let requests = world.mock.requests
            #expect(Set(requests.map(\.deviceToken)) == [Self.token(1), Self.token(2)])
            #expect(requests.count == 2)
            let request = try #require(requests.first)
            #expect(request.status == 200)
            #expect(request.headers["apns-push-type"] == "background")
            #expect(request.headers["apns-priority"] == "5")
            #expect(request.headers["apns-topic"] == Self.topic)
            let expiration = try #require(request.headers["apns-expiration"].flatMap(Int64.init))
            #expect((sentAt + 3600...drainedAt + 3600).contains(expiration))
            #expect(request.headers["apns-collapse-id"]?.hasPrefix("herald-refresh-") == true)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
            #expect(body["aps"] as? [String: Int] == ["content-available": 1])
            let herald = try #require(body["herald"] as? [String: Any])
            #expect(herald["type"] as? String == "refresh")
            #expect(herald["badge"] as? Int == 1)
            let channels = try #require(herald["channels"] as? [[String: Any]])
            #expect(channels.count == 1)
            #expect(channels.first?["channel_url"] as? String == "feed")
            #expect(channels.first?["unread_count"] as? Int == 1)
            // The notification counts the pushes it caused.
            let pushed = try await world.query("SELECT pushes_sent FROM notifications WHERE id = \(id)")[0].decode(Int64.self)
            #expect(pushed == 2)
        }
    }

    @Test func aBurstCoalescesToOnePushPerDeviceUntilTheDeviceSyncs() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, devices: ["u1": [Self.token(1), Self.token(2)]])
            defer { Task { await world.shutdown() } }
            for index in 0..<50 {
                try await world.send("burst \(index)", to: ["u1"])
                // Rounds in between, as a live dispatcher would run them mid-burst.
                if index % 10 == 0 { try await world.drain() }
            }
            try await world.drain()
            #expect(world.mock.requests.count == 2)
            #expect(Set(world.mock.requests.map(\.deviceToken)) == [Self.token(1), Self.token(2)])

            // Device 1 syncs (naming itself): its push is answered, and so is the burst it saw.
            /// The device's push state's row version (`xmin` changes with every write) and its last sync.
            @Sendable func deviceRow() async throws -> (version: String, syncedAt: Date?) {
                try await world.query(
                    "SELECT p.xmin::text, p.last_synced_at FROM devices JOIN device_push_state p ON p.device_id = devices.id WHERE token = '\(Self.token(1))'"
                )[0].decode(
                    (String, Date?).self
                )
            }
            try await world.app().test(.router) { client in
                var headers = jsonHeaders(bearer: world.sessions["u1"])
                headers[HTTPField.Name("Herald-Device")!] = Self.token(1)
                let response = try await client.execute(uri: "/v1/me/channels/feed/collection", method: .get, headers: headers)
                #expect(response.status == .ok)
                let synced = try await deviceRow()
                #expect(synced.syncedAt != nil)
                // Syncing again with nothing to answer writes nothing…
                #expect(try await client.execute(uri: "/v1/me/channels/feed/collection", method: .get, headers: headers).status == .ok)
                #expect(try await deviceRow().version == synced.version)
                // …until the last sync is older than the resolution.
                _ = try await world.query(
                    "UPDATE device_push_state p SET last_synced_at = now() - interval '2 minutes' FROM devices d WHERE d.id = p.device_id AND d.token = '\(Self.token(1))'"
                )
                let aged = try await deviceRow()
                #expect(try await client.execute(uri: "/v1/me/channels/feed/collection", method: .get, headers: headers).status == .ok)
                let refreshed = try await deviceRow()
                #expect(refreshed.version != aged.version && refreshed.syncedAt! > aged.syncedAt!)
            }
            try await world.drain()
            #expect(world.mock.requests.count == 2)  // nothing new happened: no push

            // The next notification pushes device 1 again; device 2 has not synced, so it gets none.
            try await world.send("after sync", to: ["u1"])
            try await world.drain()
            #expect(world.mock.requests.count == 3)
            #expect(world.mock.requests.last?.deviceToken == Self.token(1))
        }
    }

    /// Deleting a channel changes the list and the badge of everyone who had copies or a state in it:
    /// their devices get a refresh push (naming what is left, and no notification that went with it),
    /// a stranger's do not; the channel list, naming the device, answers that push.
    @Test func deletingAChannelPushesTheDevicesOfEveryoneWhoHadSomethingInIt() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let (d1, d2, d3, d4) = (Self.token(1), Self.token(2), Self.token(3), Self.token(4))
            let world = try await world(db, users: ["u1", "u2", "u3", "u4"], devices: ["u1": [d1], "u2": [d2], "u3": [d3], "u4": [d4]])
            defer { Task { await world.shutdown() } }
            try await world.send("hello", to: ["u1"])
            try await world.drain()
            #expect(world.mock.requests.map(\.deviceToken) == [d1])
            // u4's device wants a push for a notification in the channel, recorded but not claimed yet
            // when the channel goes (as while its dispatcher is busy elsewhere).
            let late = try await world.send("late", to: ["u4"])
            _ = try await world.query(
                """
                UPDATE device_push_state p SET wanted_xid = pg_current_xact_id()::text::bigint, notification_id = \(late)
                FROM devices d WHERE d.id = p.device_id AND d.token = '\(d4)'
                """
            )
            try await world.app().test(.router) { client in
                // u1 syncs (its push is answered); u2 only opens the channel; u3 never touches it.
                for (user, device) in [("u1", d1), ("u2", d2)] {
                    var headers = jsonHeaders(bearer: world.sessions[user])
                    headers[HTTPField.Name("Herald-Device")!] = device
                    #expect(try await client.execute(uri: "/v1/me/channels/feed/collection", method: .get, headers: headers).status == .ok)
                }
                let delete = try await client.execute(uri: "/v1/channels/feed", method: .delete, headers: jsonHeaders(bearer: Self.adminToken))
                #expect(delete.status == .ok)
            }
            try await world.drain()
            let pushes = world.mock.requests.dropFirst()
            #expect(pushes.map(\.deviceToken).sorted() == [d1, d2, d4])
            for push in pushes {
                #expect(push.status == 200)
                let herald = try #require((try JSONSerialization.jsonObject(with: Data(push.body)) as? [String: Any])?["herald"] as? [String: Any])
                #expect(herald["type"] as? String == "refresh")
                #expect(herald["badge"] as? Int == 0)
                #expect((herald["channels"] as? [Any])?.isEmpty == true)
                // No push names a notification that went with the channel.
                #expect(herald["notification_id"] == nil)
            }

            // There is no collection left to sync: the devices answer the push with the channel list —
            // u1's whole, u2's change log — and the next change pushes them again. u3's device, which
            // was not pushed, is pushed too.
            try await world.app().test(.router) { client in
                func list(_ user: String, device: String?, token: String? = nil) async throws -> [String: Any] {
                    var headers = jsonHeaders(bearer: world.sessions[user])
                    if let device { headers[HTTPField.Name("Herald-Device")!] = device }
                    let response = try await client.execute(
                        uri: "/v1/me/channels" + (token.map { "?token=\($0)" } ?? ""),
                        method: .get,
                        headers: headers
                    )
                    #expect(response.status == .ok)
                    return try jsonObject(response)
                }
                _ = try await list("u1", device: d1)
                let token = try #require(try await list("u2", device: nil)["next_token"] as? String)
                #expect(try await list("u2", device: d2, token: token)["is_live"] as? Bool == true)
            }
            _ = try await ChannelStore(client: db.client).put(
                HeraldCore.Channel(url: "feed", kind: .feed, name: "Feed", categories: [.init(id: "news", name: "News", isDefault: true)])
            )
            try await world.send("again", to: ["u1", "u2", "u3"])
            try await world.drain()
            #expect(world.mock.requests.dropFirst(4).map(\.deviceToken).sorted() == [d1, d2, d3])
        }
    }

    @Test func deadTokensAreRemovedUnlessRegisteredAgainAfterTheirTimestamp() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, devices: ["u1": [Self.token(1), Self.token(2), Self.token(3)]])
            defer { Task { await world.shutdown() } }
            world.mock.script(Self.token(1), [.status(400, reason: "BadDeviceToken")])
            // Apple learned token 2 was dead an hour ago: it was registered since, so it stays.
            world.mock.script(Self.token(2), [.status(410, reason: "Unregistered", timestamp: Int64(Date().timeIntervalSince1970 - 3600) * 1000)])
            // Token 3 died in the future of its registration: it goes.
            world.mock.script(Self.token(3), [.status(410, reason: "Unregistered", timestamp: Int64(Date().timeIntervalSince1970 + 60) * 1000)])
            try await world.send("hello", to: ["u1"])
            try await world.drain()
            let remaining = try await world.query("SELECT token FROM devices ORDER BY token").map { try $0.decode(String.self) }
            #expect(remaining == [Self.token(2)])
            try await world.app().test(.router) { client in
                let response = try await client.execute(uri: "/v1/push/failures", method: .get, headers: jsonHeaders(bearer: Self.adminToken))
                let failures = try #require(try jsonObject(response)["failures"] as? [[String: Any]])
                #expect(failures.count == 3)
                let byToken = Dictionary(uniqueKeysWithValues: failures.map { ($0["device_token"] as! String, $0) })
                #expect(byToken[Self.token(1)]?["reason"] as? String == "BadDeviceToken")
                #expect(byToken[Self.token(1)]?["token_removed"] as? Bool == true)
                #expect(byToken[Self.token(2)]?["token_removed"] as? Bool == false)
                #expect(byToken[Self.token(3)]?["token_removed"] as? Bool == true)
                #expect(byToken[Self.token(1)]?["user_id"] as? String == "u1")
            }
            #expect(world.mock.requests.count == 3)  // never retried
        }
    }

    @Test func retryableFailuresAreRetriedAndPermanentOnesListed() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, devices: ["u1": [Self.token(1), Self.token(2), Self.token(3), Self.token(4)]]) { settings in
                settings.maximumAttempts = 3
                settings.throttleDelay = .seconds(600)
            }
            defer { Task { await world.shutdown() } }
            world.mock.script(Self.token(1), [.status(500, reason: "InternalServerError"), .status(503, reason: "ServiceUnavailable")])
            world.mock.script(Self.token(2), [.status(403, reason: "ExpiredProviderToken")])
            world.mock.script(Self.token(3), [.status(429, reason: "TooManyRequests")])
            world.mock.script(Self.token(4), [.status(500), .status(500), .status(500)])
            try await world.send("hello", to: ["u1"])
            try await world.drain()
            func statuses(_ token: String) -> [Int?] { world.mock.requests.filter { $0.deviceToken == token }.map(\.status) }
            #expect(statuses(Self.token(1)) == [500, 503, 200])  // 5xx retried until it succeeds
            #expect(statuses(Self.token(2)) == [403, 200])  // a new provider token, then success
            let tokens = world.mock.requests.filter { $0.deviceToken == Self.token(2) }.map { $0.headers["authorization"] }
            #expect(tokens.count == 2 && tokens[0] != tokens[1])
            #expect(statuses(Self.token(4)) == [500, 500, 500])  // out of attempts: a dead letter
            // 429: backed off for this token only (10 minutes here, ± jitter) — not retried yet.
            #expect(statuses(Self.token(3)) == [429])
            let waiting = try await world.query(
                "SELECT p.next_attempt_at > now() + interval '7 minutes' FROM devices JOIN device_push_state p ON p.device_id = devices.id WHERE token = '\(Self.token(3))'"
            )
            #expect(try waiting[0].decode(Bool.self))
            // The wait passes: the retry goes out and succeeds.
            _ = try await world.query(
                "UPDATE device_push_state p SET next_attempt_at = now() FROM devices d WHERE d.id = p.device_id AND d.token = '\(Self.token(3))'"
            )
            try await world.drain()
            #expect(statuses(Self.token(3)) == [429, 200])
            let failures = try await PushStore(client: db.client).failures(limit: 10, before: nil)
            #expect(failures.map(\.deviceToken) == [Self.token(4)])
            #expect(failures.first?.reason.contains("gave up after 3 attempts") == true)
            #expect(failures.first?.tokenRemoved == false)
        }
    }

    /// One credential's secret no longer opens (here: a sealed value moved to another credential's row,
    /// which the name sealed in with it forbids): it is listed as unreadable and its pushes fail with
    /// that reason, while the other credential keeps pushing.
    @Test func aCredentialThatDoesNotOpenIsListedAndTheOthersKeepPushing() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let otherTopic = "com.example.other"
            let world = try await world(db, devices: ["u1": [Self.token(1)]])
            defer { Task { await world.shutdown() } }
            try await world.app().test(.router) { client in
                let upload = try await Self.uploadTokenCredential(client, name: "other", topic: otherTopic)
                #expect(upload.status == .created)
                #expect(try jsonObject(upload)["status"] as? String == "ready")
                let device = try await client.execute(
                    uri: "/v1/me/devices/\(Self.token(2))",
                    method: .put,
                    headers: jsonHeaders(bearer: world.sessions["u2"]),
                    body: ByteBuffer(string: #"{"environment":"sandbox","topic":"\#(otherTopic)"}"#)
                )
                #expect(device.status == .created)
            }
            try await world.query(
                "UPDATE apns_credentials SET secret = (SELECT secret FROM apns_credentials WHERE name = 'main'), updated_at = now() WHERE name = 'other'"
            )

            try await world.send("hello", to: ["u1", "u2"])
            try await world.drain()
            #expect(world.mock.requests.map(\.deviceToken) == [Self.token(1)])
            #expect(world.mock.requests.first?.status == 200)
            let failures = try await PushStore(client: db.client).failures(limit: 10, before: nil)
            #expect(failures.map(\.deviceToken) == [Self.token(2)])
            #expect(failures.first?.reason == "APNs credential 'other' does not open with this server's secret key; upload it again")
            #expect(failures.first?.tokenRemoved == false)

            try await world.app().test(.router) { client in
                let list = try await client.execute(uri: "/v1/apns/credentials", method: .get, headers: jsonHeaders(bearer: Self.adminToken))
                let credentials = try #require(try jsonObject(list)["credentials"] as? [[String: Any]])
                #expect(credentials.map { $0["name"] as? String } == ["main", "other"])
                #expect(credentials.map { $0["status"] as? String } == ["ready", "unreadable"])
            }
        }
    }

    @Test func goAwayMidBurstAndAHungStreamAreRetried() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let tokens = (1...6).map(Self.token)
            let world = try await world(db, devices: ["u1": Array(tokens.prefix(3)), "u2": Array(tokens.suffix(3))]) { settings in
                settings.requestTimeout = .seconds(1)
                settings.maximumAttempts = 10
            }
            defer { Task { await world.shutdown() } }
            world.mock.script(tokens[1], [.goAway])
            world.mock.script(tokens[4], [.hang])
            try await world.send("hello", to: ["u1", "u2"])
            try await world.drain()
            let delivered = Set(world.mock.requests.filter { $0.status == 200 }.map(\.deviceToken))
            #expect(delivered == Set(tokens))
            #expect(world.mock.requests.filter { $0.deviceToken == tokens[4] }.count >= 2)
            #expect(Set(world.mock.requests.map(\.connection)).count >= 2)
            let wanting = try await world.query("SELECT count(*) FROM device_push_state WHERE wanted_xid IS NOT NULL")[0].decode(Int64.self)
            #expect(wanting == 0)
        }
    }

    @Test func claimsOfADeadDispatcherAreTakenOverAfterTheirLease() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let tokens = (1...10).map(Self.token)
            let world = try await world(db, users: ["u1", "u2"], devices: ["u1": Array(tokens.prefix(5)), "u2": Array(tokens.suffix(5))])
            defer { Task { await world.shutdown() } }
            try await world.send("hello", to: ["u1", "u2"])
            // Dispatcher A expands the outbox and claims part of the work, then dies before sending.
            let store = PushStore(client: db.client)
            #expect(try await store.expandOutbox(atLeast: 100).recipients == 2)
            let claimedByA = try await store.claimDue(limit: 4, terms: ClaimTerms(lease: .seconds(3600), minimumInterval: .zero))
            #expect(claimedByA.count == 4)
            // Dispatcher B sends what is free, but not what A holds.
            try await world.drain()
            #expect(world.mock.requests.count == 6)
            #expect(Set(world.mock.requests.map(\.deviceToken)).isDisjoint(with: claimedByA.map(\.address.token)))
            // A's lease lapses (an hour passes): B takes the rest over.
            _ = try await world.query("UPDATE device_push_state SET claimed_until = now() - interval '1 second' WHERE claimed_until IS NOT NULL")
            try await world.drain()
            #expect(Set(world.mock.requests.map(\.deviceToken)) == Set(tokens))
            #expect(world.mock.requests.count == 10)
        }
    }

    /// A device that syncs after its push was claimed but before the delivery is recorded (the push
    /// reached it first, or the dispatcher was still waiting for the rest of its batch) has answered
    /// the push: the next change must push it again, not wait for a sync that already happened.
    @Test func aSyncDuringThePushsFlightAnswersIt() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, devices: ["u1": [Self.token(1)], "u2": [Self.token(2)]])
            defer { Task { await world.shutdown() } }
            try await world.send("hello", to: ["u1", "u2"])
            let store = PushStore(client: db.client)
            #expect(try await store.expandOutbox(atLeast: 100).recipients == 2)
            let claims = try await store.claimDue(limit: 10, terms: ClaimTerms(lease: .seconds(60), minimumInterval: .zero))
            #expect(claims.count == 2)
            // u1's device syncs while the push is in flight; u2's does not.
            let u1 = try #require(try await UserStore(client: db.client).key("u1"))
            let horizon = try await world.query("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")[0].decode(Int64.self)
            #expect(try await store.markSynced(userKey: u1, device: .token(Self.token(1)), horizon: horizon) != nil)
            try await store.recordDelivered(claims)
            let outstanding = try await world.query(
                "SELECT token, p.outstanding FROM devices JOIN device_push_state p ON p.device_id = devices.id ORDER BY token"
            ).map {
                try $0.decode((String, Bool).self)
            }
            #expect(outstanding.map(\.1) == [false, true], "\(outstanding)")
            // The next change pushes u1's device again at once; u2's waits for its sync.
            try await world.send("again", to: ["u1", "u2"])
            try await world.drain()
            #expect(world.mock.requests.map(\.deviceToken) == [Self.token(1)])
        }
    }

    @Test func withoutCredentialsPushesGoToTheLog() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, devices: ["u1": [Self.token(1)]])
            defer { Task { await world.shutdown() } }
            _ = try await world.query("DELETE FROM apns_credentials")
            try await world.send("hello", to: ["u1"])
            try await world.drain()
            #expect(world.transport.isLoggingOnly)
            #expect(world.mock.requests.isEmpty)
            // Logged counts as delivered: the device has its refresh outstanding, nothing is retried.
            let outstanding = try await world.query("SELECT outstanding FROM device_push_state")[0].decode(Bool.self)
            #expect(outstanding)
        }
    }

    /// A real `herald serve` process is killed (SIGKILL) while its dispatcher has pushes in flight; a
    /// second process takes its claimed devices over once the lease lapses, and every device still gets
    /// its push.
    @Test func aKilledDispatcherProcessIsTakenOverByAnother() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let tokens = (1...6).map(Self.token)
            let world = try await world(db, devices: ["u1": Array(tokens.prefix(3)), "u2": Array(tokens.suffix(3))])
            defer { Task { await world.shutdown() } }
            // The first process's pushes never get an answer: it is mid-batch when it dies.
            for token in tokens { world.mock.script(token, [.hang]) }
            let environment = db.heraldEnvironment.merging([
                "HERALD_SECRET_KEY": world.secretKeyHex, "HERALD_ADMIN_TOKEN": Self.adminToken,
                "HERALD_APNS_URL": world.mock.baseURL, "HERALD_APNS_CA_FILE": world.mock.trustRootFile,
                "HERALD_REFRESH_MIN_INTERVAL": "0s", "HERALD_PUSH_LEASE": "2s", "HERALD_LOG_LEVEL": "info",
            ]) { $1 }
            let arguments = ["serve", "--port", "0", "--sql-dir", TestPostgres.repositoryRoot() + "/sql"]
            let first = try HeraldProcess(arguments: arguments, environment: environment)
            _ = try await first.waitForLine(containing: "Herald listening on")
            try await world.send("hello", to: ["u1", "u2"])
            try await withTimeout(.seconds(60), what: "the first dispatcher's pushes") { await world.mock.waitForRequests(tokens.count) }
            first.signal(SIGKILL)
            _ = try await first.waitForExit()
            #expect(world.mock.requests.allSatisfy { $0.status == nil })  // all in flight, none answered

            let second = try HeraldProcess(arguments: arguments, environment: environment)
            _ = try await second.waitForLine(containing: "Herald listening on")
            try await withTimeout(.seconds(60), what: "the second dispatcher's pushes") { await world.mock.waitForRequests(2 * tokens.count) }
            second.signal(SIGTERM)
            _ = try await second.waitForExit()
            let delivered = Set(world.mock.requests.filter { $0.status == 200 }.map(\.deviceToken))
            #expect(delivered == Set(tokens))
        }
    }

    /// Crash safety: `herald serve` is killed (SIGKILL) at seeded random points while three
    /// broadcasts fan out, fold into the counters and push, and started again each time. In the end no
    /// copy is lost (none can be doubled: the recipients' key forbids it), every unread counter equals
    /// the truth, and every device got its refresh push.
    @Test func killedAtRandomPointsDuringFanoutAndDispatchNothingIsLost() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            // The device owners' keys sit in the middle, so that their pushes go out mid-fan-out.
            let bulk = 6_000
            _ = try await db.client.query("INSERT INTO users (id) SELECT 'bulk-' || g FROM generate_series(1, \(bulk / 2)) AS g")
            let owners = (1...12).map { "d\($0)" }
            let tokens = (1...12).map(Self.token)
            let world = try await world(db, users: owners, devices: Dictionary(uniqueKeysWithValues: zip(owners, tokens.map { [$0] })))
            defer { Task { await world.shutdown() } }
            _ = try await world.query("INSERT INTO users (id) SELECT 'bulk-' || g FROM generate_series(\(bulk / 2 + 1), \(bulk)) AS g")
            let users = bulk + owners.count
            let template = try #require(try await TemplateStore(client: db.client).get("plain"))
            var ids: [Int64] = []
            for index in 0..<3 {
                let draft = NotificationDraft(
                    channelURL: "feed",
                    templateKey: "plain",
                    templateVersion: template.version,
                    variables: ["title": .string("all \(index)")],
                    content: try template.template.renderNotification(variables: ["title": .string("all \(index)")], userVariables: [:]),
                    category: "news",
                    tags: [],
                    eventDeadline: nil,
                    push: PushOptions(),
                    audience: .all
                )
                guard
                    case .created(let stored, _, _) = try await NotificationStore(client: db.client).send(
                        draft,
                        idempotency: nil,
                        respond: { _ in StoredResponse(status: 202, body: []) }
                    )
                else { throw CancellationError() }
                ids.append(stored.id)
            }
            @Sendable func copies() async throws -> Int {
                try await world.query("SELECT count(*) FROM notification_recipients").first!.decode(Int.self)
            }
            let total = 3 * users
            let environment = db.heraldEnvironment.merging([
                "HERALD_SECRET_KEY": world.secretKeyHex, "HERALD_ADMIN_TOKEN": Self.adminToken,
                "HERALD_APNS_URL": world.mock.baseURL, "HERALD_APNS_CA_FILE": world.mock.trustRootFile,
                "HERALD_REFRESH_MIN_INTERVAL": "0s", "HERALD_PUSH_LEASE": "2s", "HERALD_FANOUT_BATCH_SIZE": "100",
            ]) { $1 }
            let arguments = ["serve", "--port", "0", "--sql-dir", TestPostgres.repositoryRoot() + "/sql"]
            var random = SplitMix64(seed: 0xC4A5_4ED)
            var killedMidway = 0
            for _ in 0..<3 {
                let process = try HeraldProcess(arguments: arguments, environment: environment)
                _ = try await process.waitForLine(containing: "Herald listening on")
                let reached = try await copies()
                // Somewhere in the next fifth of what is left: while a batch is being written, folded or pushed.
                let threshold = reached + Int.random(in: 1...max(1, (total - reached) / 5), using: &random)
                try await waitUntil("the fan-out to pass \(threshold) copies") { try await copies() >= threshold }
                process.signal(SIGKILL)
                _ = try await process.waitForExit()
                if try await copies() < total { killedMidway += 1 }
            }
            #expect(killedMidway >= 2)

            let last = try HeraldProcess(arguments: arguments, environment: environment)
            _ = try await last.waitForLine(containing: "Herald listening on")
            try await waitUntil("every broadcast fanned out and folded, every device pushed") {
                let unfinished = try await world.query(
                    "SELECT count(*) FROM notifications WHERE fanout_state <> 'done' OR folded_through < fanout_through"
                ).first!.decode(Int.self)
                let pushed = Set(world.mock.requests.filter { $0.status == 200 }.map(\.deviceToken))
                return unfinished == 0 && pushed == Set(tokens)
            }
            last.signal(SIGTERM)
            #expect(try await last.waitForExit() == 0)

            for id in ids {
                let counted = try await world.query(
                    "SELECT count(*), count(DISTINCT user_key) FROM notification_recipients WHERE notification_id = \(id)"
                ).first!.decode((Int, Int).self)
                #expect(counted == (users, users), "notification \(id)")
            }
            try await CollectionTests.expectUnreadCountsMatchCopies(db)
        }
    }

    /// `herald push test --user` pushes every device of the user at once and prints each answer.
    @Test func pushTestCommandReportsEachDevice() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, devices: ["u1": [Self.token(1), Self.token(2)]])
            defer { Task { await world.shutdown() } }
            world.mock.script(Self.token(2), [.status(400, reason: "BadDeviceToken")])
            let command = try HeraldProcess(
                arguments: ["push", "test", "--user", "u1", "--sql-dir", TestPostgres.repositoryRoot() + "/sql"],
                environment: db.heraldEnvironment.merging([
                    "HERALD_SECRET_KEY": world.secretKeyHex,
                    "HERALD_APNS_URL": world.mock.baseURL, "HERALD_APNS_CA_FILE": world.mock.trustRootFile,
                ]) { $1 }
            )
            let status = try await command.waitForExit()
            #expect(status == 1)  // one device was refused
            let printed = command.printed
            #expect(printed.contains { $0.hasPrefix("apns \(Self.token(1)) sandbox") && $0.contains(": delivered status=200") })
            #expect(printed.contains { $0.hasPrefix("apns \(Self.token(2)) sandbox") && $0.contains(": gone status=400 reason=BadDeviceToken") })
            #expect(world.mock.requests.count == 2)
            #expect(world.mock.requests.allSatisfy { $0.headers["apns-push-type"] == "background" })
        }
    }

    /// Sends the `plain` template to everyone (`audience: "all"`) on `channel` and runs its fan-out in
    /// batches of `batchSize`.
    static func broadcast(_ db: TestDatabase, channel: String, batchSize: Int) async throws {
        let template = try #require(try await TemplateStore(client: db.client).get("plain"))
        let notifications = NotificationStore(client: db.client)
        let broadcast = NotificationDraft(
            channelURL: channel,
            templateKey: "plain",
            templateVersion: template.version,
            variables: ["title": .string("all")],
            content: try template.template.renderNotification(variables: ["title": .string("all")], userVariables: [:]),
            category: "news",
            tags: [],
            eventDeadline: nil,
            push: PushOptions(),
            audience: .all
        )
        _ = try await notifications.send(broadcast, idempotency: nil, respond: { _ in StoredResponse(status: 202, body: []) })
        while try await notifications.fanOutNextBatch(size: batchSize) != nil {}
    }

    /// A row naming more recipients than a slice is expanded a slice at a time, in user order, and
    /// goes with its last slice — both a row for all of a notification's recipients and the
    /// per-batch rows of a broadcast fan-out.
    @Test func outboxRowsAreExpandedASliceAtATime() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let users = (1...7).map { "u\($0)" }
            let world = try await world(
                db,
                users: users,
                devices: Dictionary(uniqueKeysWithValues: users.enumerated().map { ($1, [Self.token($0)]) })
            )
            defer { Task { await world.shutdown() } }
            let store = PushStore(client: db.client)
            func wanted() async throws -> Int64 {
                try await db.client.query("SELECT count(*) FROM device_push_state WHERE wanted_xid IS NOT NULL")[0].decode(Int64.self)
            }
            func outbox() async throws -> Int64 { try await db.client.query("SELECT count(*) FROM push_outbox")[0].decode(Int64.self) }

            _ = try await world.send("hello", to: users)
            var slices: [Int] = []
            while let taken = try await store.expandOutbox(users: 3) {
                slices.append(taken.recipients)
                #expect(taken.claims.isEmpty)
                if slices.count == 1 {
                    #expect(try await wanted() == 3)
                    #expect(try await outbox() == 1)
                }
            }
            #expect(slices == [3, 3, 1])
            #expect(try await wanted() == 7)
            #expect(try await outbox() == 0)

            _ = try await db.client.query("UPDATE device_push_state SET wanted_xid = NULL, notification_id = NULL")
            try await Self.broadcast(db, channel: "feed", batchSize: 3)
            #expect(try await outbox() == 3)  // users (…, 3], (3, 6], (6, 7]
            // This time the expansion also claims what it makes due (what the dispatcher does), except
            // a device claimed by another dispatcher whose lease still runs.
            _ = try await db.client.query(
                "UPDATE device_push_state p SET claimed_until = now() + interval '1 hour' FROM devices d WHERE d.id = p.device_id AND d.token = \(Self.token(0))"
            )
            slices = []
            var claimed: [String] = []
            let terms = ClaimTerms(lease: .seconds(60), minimumInterval: .zero)
            while let taken = try await store.expandOutbox(users: 2, claiming: terms) {
                slices.append(taken.recipients)
                claimed += taken.claims.map(\.address.token)
            }
            #expect(slices == [2, 1, 2, 1, 1])
            #expect(try await wanted() == 7)
            #expect(try await outbox() == 0)
            #expect(Set(claimed) == Set((1..<7).map(Self.token)))
            #expect(claimed.count == 6)
            #expect(try await store.claimDue(limit: 10, terms: terms).isEmpty)
        }
    }

    /// The batch query for refresh payloads agrees with the per-user unread counts (targeted sends,
    /// a broadcast, a read, another channel).
    @Test func refreshSummariesMatchEachUsersUnreadCounts() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2", "u3"])
            defer { Task { await world.shutdown() } }
            _ = try await ChannelStore(client: db.client).put(
                HeraldCore.Channel(url: "other", kind: .feed, name: "Other", categories: [.init(id: "news", name: "News", isDefault: true)])
            )
            try await world.send("one", to: ["u1", "u2"])
            try await world.send("two", to: ["u1"])
            // u3's only copy in feed is deleted: feed is in neither answer for u3.
            #expect(try await NotificationStore(client: db.client).delete(try await world.send("gone", to: ["u3"])))
            try await Self.broadcast(db, channel: "other", batchSize: 2)
            let collections = CollectionStore(client: db.client)
            let keys = try await ["u1", "u2", "u3"].asyncMap { try #require(try await UserStore(client: db.client).key($0)) }
            _ = try await collections.markRead(userKey: keys[1], channelKey: try #require(try await collections.channel("feed")).key, ids: nil)
            let summaries = try await PushStore(client: db.client).refreshSummaries(userKeys: keys)
            for key in keys {
                let expected = try await collections.unread(userKey: key).channels
                let actual = summaries[key] ?? []
                #expect(actual.map(\.url) == expected.map(\.url), "user \(key)")
                #expect(actual.map(\.unread) == expected.map(\.unread), "user \(key)")
            }
            #expect(summaries[keys[0]]?.map(\.unread) == [2, 1])  // feed: two targeted; other: the broadcast
            #expect(summaries[keys[2]]?.map(\.url) == ["other"])
        }
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
