import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Postgres
import Prometheus
import Testing

/// Bad input and isolation, at scale: thousands of requests generated from `openapi.yaml`
/// (`OpenAPIRequestGenerator`), sent over real HTTP to a server on a real database. None may get a 5xx;
/// every rejection must be the documented JSON error; no answer may carry a secret; the unread counters
/// still equal the true counts afterwards; and one user's requests leave another's rows as they were.
@Suite("Generated requests", .timeLimit(.minutes(5)))
struct GeneratedRequestsTests {
    static let adminToken = "test-admin-token-generated-0123456789"
    static let device = String(repeating: "ab", count: 32)
    /// The key sealing APNs credentials (`HERALD_SECRET_KEY`).
    static let secretKeyHex = Hex.encode(SecureRandom.bytes(32))
    /// An FCM service account's key (uploaded as `main`), and a VAPID key to upload.
    static let fcmKey = RS256Key()
    static let vapidKey = P256Key()

    /// The FCM key file the fixtures upload.
    static var fcmKeyFile: [String: Any] {
        (try? JSONSerialization.jsonObject(
            with: Data(
                MockFCMServer.keyFile(
                    tokenURI: "https://oauth2.googleapis.com/token",
                    key: fcmKey,
                    projectID: "herald-generated",
                    email: "herald@herald-generated.iam.gserviceaccount.com"
                )
            )
        ) as? [String: Any]) ?? [:]
    }

    /// What no answer may ever carry: the admin token, the secret key, the sessions the test holds
    /// (issued once, never to be shown again), and the uploaded credentials' secrets — a line of the
    /// `.p8` key, a stretch of the `.p12` as uploaded, the `.p12`'s password.
    static func secrets(_ fixtures: Fixtures) -> [String] {
        let credentials = TestCredentials.shared
        let keyLine = credentials.signingKeyPEM.split(separator: "\n").dropFirst().first.map(String.init) ?? credentials.signingKeyPEM
        let p12 = Data(credentials.p12).base64EncodedString()
        // A line from the middle of each PEM: its first lines are alike in every key.
        func middleLine(_ pem: String) -> String {
            let lines = pem.split(separator: "\n")
            return String(lines[lines.count / 2])
        }
        return [
            adminToken, secretKeyHex, fixtures.session, fixtures.otherSession, keyLine, String(p12.dropFirst(40).prefix(40)),
            credentials.certificatePassword, String(repeating: "s", count: 32), middleLine(fcmKey.pem), middleLine(vapidKey.pem),
        ]
    }

    @Test(arguments: [UInt64(0x4845_5241_4C44), 20_261_123])
    func requestsGeneratedFromTheDocumentNeverFailTheServer(seed: UInt64) async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await Self.server(db).test(.live) { client in
                let fixtures = try await Self.makeFixtures(client)
                var generator = try OpenAPIRequestGenerator(
                    documentPath: TestPostgres.repositoryRoot() + "/openapi.yaml",
                    seed: seed,
                    pools: fixtures.pools,
                    credentials: ["admin": Self.adminToken, "session": fixtures.session]
                )
                let operations = generator.operations
                var shuffler = SplitMix64(seed: ~seed)
                #expect(operations.count >= 40)

                var failures: [String] = []
                var succeeded: [String: Int] = [:]
                var rejected: [String: Int] = [:]
                let rounds = 60
                for round in 0..<rounds {
                    // Deletes and resets among the requests take things away; bring them back so that
                    // later requests still reach the handlers.
                    if round % 5 == 0 {
                        Self.pointPools(&generator.pools, at: try await Self.restore(client))
                        // A channel deleted and made again is a new channel: tokens of the old one end.
                        let syncToken = try await Self.syncToken(client, session: fixtures.session)
                        generator.pools["token"]?[0] = syncToken
                        // Unregistering takes the device every request of its own may name (syncs,
                        // the list, receipts): back with it, so that those reach their handlers.
                        try await Self.registerDevice(client, session: fixtures.session)
                    }
                    for operation in operations.shuffled(using: &shuffler) {
                        let request = generator.request(for: operation)
                        let response = try await Self.send(request, with: client)
                        let status = response.status.code
                        let text = String(buffer: response.body)
                        if let problem = Self.problem(
                            status: status,
                            contentType: response.headers[.contentType],
                            body: text,
                            secrets: Self.secrets(fixtures)
                        ) {
                            failures.append("\(problem) — \(status) \(text.prefix(300)) for \(request)")
                        }
                        if status < 300 { succeeded[operation.id, default: 0] += 1 }
                        if status >= 400 { rejected[operation.id, default: 0] += 1 }
                    }
                }
                #expect(failures.isEmpty, "\(failures.count) bad answers, first: \(failures.prefix(10).joined(separator: "\n"))")
                // The generator must reach the handlers, not only the front door: every operation
                // succeeded at least once (the stream answers only upgrades) and was refused at least once.
                let neverSucceeded = operations.map(\.id).filter { succeeded[$0] == nil && $0 != "openStream" }
                #expect(neverSucceeded.isEmpty, "operations that never succeeded: \(neverSucceeded)")
                // The VAPID public key and the demo page take no input and no credentials: nothing to refuse.
                let neverRejected = operations.map(\.id).filter {
                    rejected[$0] == nil && !["health", "ready", "metrics", "webPushKey", "demoPage"].contains($0)
                }
                #expect(neverRejected.isEmpty, "operations never refused: \(neverRejected)")
                #expect(succeeded.values.reduce(0, +) + rejected.values.reduce(0, +) == rounds * operations.count)
            }
            // Nothing was half-written: after all of it, every unread counter still equals the truth.
            try await CollectionTests.expectUnreadCountsMatchCopies(db)
        }
    }

    /// Isolation: generated user requests with another user's session — aimed at the first
    /// user's notification ids, sync and list tokens, device token and channels — change nothing of the
    /// first user's. (Registering a device is left out: a token registered again moves to the new
    /// user, as APNs tokens follow the device's current user.)
    @Test func oneUsersRequestsNeverChangeAnothersData() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await Self.server(db).test(.live) { client in
                let fixtures = try await Self.makeFixtures(client)
                // Marks and receipts of the owner's own, so that there is state to protect.
                for path in ["/v1/me/channels/feed/seen", "/v1/me/channels/feed/read"] {
                    let mark = try await client.execute(
                        uri: path,
                        method: .post,
                        headers: jsonHeaders(bearer: fixtures.session),
                        body: ByteBuffer(string: "{}")
                    )
                    #expect(mark.status == .ok)
                }
                let intruder = try #require(
                    try jsonObject(
                        try await client.execute(uri: "/v1/users/u1/sessions", method: .post, headers: jsonHeaders(bearer: Self.adminToken))
                    )["token"] as? String
                )
                let before = try await Self.snapshot(of: "me", db)
                #expect(before.count > 5)

                var generator = try OpenAPIRequestGenerator(
                    documentPath: TestPostgres.repositoryRoot() + "/openapi.yaml",
                    seed: 0x1501,
                    pools: fixtures.pools,
                    credentials: ["session": intruder]
                )
                let operations = generator.operations.filter { $0.schemes == ["session"] && !["registerDevice", "openStream"].contains($0.id) }
                #expect(operations.count >= 15)
                var succeeded = 0
                for _ in 0..<40 {
                    for operation in operations {
                        let request = generator.request(for: operation)
                        let response = try await Self.send(request, with: client)
                        #expect(response.status.code < 500, "\(response.status) for \(request)")
                        if response.status.code < 300 { succeeded += 1 }
                    }
                }
                // The intruder did act (on its own data), and nothing of the owner's moved.
                #expect(succeeded > operations.count * 10)
                let after = try await Self.snapshot(of: "me", db)
                let changed = Set(after).symmetricDifference(before)
                #expect(changed.isEmpty && after.count == before.count, "the owner's rows changed: \(changed.sorted().prefix(10))")
            }
        }
    }

    /// Authorization, as the document states it: every operation, each sent valid but for its
    /// credentials — none, malformed, an expired session, the user's session, another user's session,
    /// the admin token — gets the answer its `security` calls for. Admin routes refuse every session
    /// (403 for a live one); user routes refuse the admin token; another user's session acts on that
    /// user's data only, never the first user's.
    @Test func everyOperationAnswersEachCredentialAsItsSecuritySays() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await Self.server(db).test(.live) { client in
                let fixtures = try await Self.makeFixtures(client)
                let admin = jsonHeaders(bearer: Self.adminToken)
                let other = try #require(
                    try jsonObject(try await client.execute(uri: "/v1/users/u1/sessions", method: .post, headers: admin))["token"] as? String
                )
                let expired = try #require(
                    try jsonObject(try await client.execute(uri: "/v1/users/me/sessions", method: .post, headers: admin))["token"] as? String
                )
                let expiredHash = PostgresBytes(try #require(SessionToken(parsing: expired)).hash)
                let aged = try await db.client.query(
                    "UPDATE sessions SET expires_at = now() - interval '1 second' WHERE user_id = 'me' AND token_hash = \(expiredHash)"
                )
                #expect(aged.affectedRows == 1)
                #expect(try await client.execute(uri: "/v1/me/unread", method: .get, headers: jsonHeaders(bearer: expired)).status == .unauthorized)
                #expect(try await client.execute(uri: "/v1/me/unread", method: .get, headers: jsonHeaders(bearer: fixtures.session)).status == .ok)

                var generator = try OpenAPIRequestGenerator(
                    documentPath: TestPostgres.repositoryRoot() + "/openapi.yaml",
                    seed: 0xA17,
                    pools: fixtures.pools,
                    credentials: [:]
                )
                let operations = generator.operations
                #expect(operations.count >= 40)
                enum Credential: String, CaseIterable {
                    case none, malformed, expired
                    case otherUser = "another user's session"
                    case user = "the user's session"
                    case admin
                }
                // The order matters only in that the admin token goes last: its deletes may remove fixtures.
                let columns: [(Credential, String?)] = [
                    (.none, nil), (.malformed, "Bearer not-a-session-token"), (.expired, "Bearer \(expired)"), (.otherUser, "Bearer \(other)"),
                    (.user, "Bearer \(fixtures.session)"), (.admin, "Bearer \(Self.adminToken)"),
                ]
                var mismatches: [String] = []
                var before: [String] = []
                for (credential, authorization) in columns {
                    if credential == .otherUser { before = try await Self.snapshot(of: "me", db) }
                    // A device registered again moves to the new user (tokens follow the device's
                    // current user): with another user's session registrations go last, after the check.
                    let registrations = ["registerDevice", "addDevice"]
                    let ordered =
                        operations.filter { !registrations.contains($0.id) } + registrations.compactMap { id in operations.first { $0.id == id } }
                    for operation in ordered {
                        if credential == .otherUser, operation.id == registrations[0] {
                            let after = try await Self.snapshot(of: "me", db)
                            let changed = Set(after).symmetricDifference(before)
                            #expect(changed.isEmpty, "another user's session changed the user's rows: \(changed.sorted().prefix(10))")
                        }
                        var request = generator.validRequest(for: operation)
                        if let authorization { request.headers["Authorization"] = authorization }
                        let response = try await Self.send(request, with: client)
                        let status = Int(response.status.code)
                        let refused = status == 401 || status == 403
                        let expected: String?
                        switch (operation.schemes.first, credential) {
                        case (nil, _): expected = refused ? "an answer for anyone" : nil
                        case ("admin", .admin): expected = refused ? "the admin's answer" : nil
                        case ("admin", .user), ("admin", .otherUser): expected = status == 403 ? nil : "403"
                        case ("admin", _): expected = status == 401 ? nil : "401"
                        case (_, .user), (_, .otherUser): expected = refused ? "the user's answer" : nil
                        default: expected = status == 401 ? nil : "401"
                        }
                        if let expected {
                            mismatches.append("\(operation.id) with \(credential.rawValue): \(status), expected \(expected) — \(request)")
                        }
                        if let problem = Self.problem(
                            status: status,
                            contentType: response.headers[.contentType],
                            body: String(buffer: response.body),
                            secrets: Self.secrets(fixtures) + [other, expired]
                        ), status != 426 {
                            mismatches.append("\(operation.id) with \(credential.rawValue): \(problem)")
                        }
                    }
                }
                #expect(mismatches.isEmpty, "\(mismatches.count) answers off the document: \(mismatches.prefix(15).joined(separator: "\n"))")
                #expect(Set(operations.compactMap(\.schemes.first)) == ["admin", "session"])
            }
        }
    }

    /// Every row of the user's in every per-user table, as text.
    static func snapshot(of user: String, _ db: TestDatabase) async throws -> [String] {
        let key = try #require(try await db.client.query("SELECT key FROM users WHERE id = \(user)").first?.decode(Int64.self))
        return try await db.client.query(
            """
            SELECT 'user ' || u::text FROM users u WHERE u.key = \(key)
            UNION ALL SELECT 'session ' || s::text FROM sessions s WHERE s.user_id = \(user)
            UNION ALL SELECT 'copy ' || r::text FROM notification_recipients r WHERE r.user_key = \(key)
            UNION ALL SELECT 'state ' || c::text FROM channel_states c WHERE c.user_key = \(key)
            UNION ALL SELECT 'device ' || d::text FROM devices d WHERE d.user_key = \(key)
            UNION ALL SELECT 'event ' || e::text FROM notification_events e WHERE e.user_key = \(key)
            UNION ALL SELECT 'preferences ' || p::text FROM push_preferences p WHERE p.user_key = \(key)
            UNION ALL SELECT 'channel preferences ' || p::text FROM channel_push_preferences p WHERE p.user_key = \(key)
            UNION ALL SELECT 'removal ' || g::text FROM channel_list_removals g WHERE g.user_key = \(key)
            ORDER BY 1
            """
        ).map { try $0.decode(String.self) }
    }

    /// Herald on the test database, served over real HTTP (with a key for APNs credentials).
    static func server(_ db: TestDatabase) throws -> some ApplicationProtocol {
        let box = try SecretBox(hexKey: secretKeyHex)
        var dependencies = try heraldDependencies(db, adminToken: adminToken, secrets: box)
        dependencies.clientFiles = try ClientFiles.load(directory: TestPostgres.repositoryRoot() + "/web", demo: true)
        return HeraldApplication.build(dependencies, host: "127.0.0.1", port: 0, logger: Logger(label: "test.generated"), services: [])
    }

    static func send(_ request: GeneratedRequest, with client: some TestClientProtocol) async throws -> TestResponse {
        var headers = HTTPFields()
        for (name, value) in request.headers {
            guard let field = HTTPField.Name(name) else { continue }
            headers[field] = value
        }
        return try await client.execute(
            uri: request.uri,
            method: HTTPRequest.Method(request.method)!,
            headers: headers,
            body: request.body.map { ByteBuffer(bytes: $0) }
        )
    }

    /// What is wrong with an answer, if anything.
    static func problem(status: Int, contentType: String?, body: String, secrets: [String]) -> String? {
        if status >= 500 { return "server error" }
        if let secret = secrets.first(where: { body.contains($0) }) { return "answer carries a secret (\(secret.prefix(6))…)" }
        guard status >= 400 else { return nil }
        guard contentType?.hasPrefix("application/json") == true else { return "error without a JSON content type (\(contentType ?? "none"))" }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
            object.count == 1, let error = object["error"] as? [String: Any],
            let code = error["code"] as? String, !code.isEmpty,
            let message = error["message"] as? String, !message.isEmpty
        else { return "error not in the documented shape" }
        return nil
    }

    struct Fixtures {
        var session: String
        /// A session of another user (`u2`), never used by the requests.
        var otherSession: String
        var pools: [String: [Any]]
    }

    /// Users, a session, channels, a template, a credential, a sent notification and a device, made
    /// through the API.
    static func makeFixtures(_ client: some TestClientProtocol) async throws -> Fixtures {
        let admin = jsonHeaders(bearer: adminToken)
        for user in ["me", "u1", "u2"] {
            #expect(try await client.execute(uri: "/v1/users/\(user)", method: .put, headers: admin).status == .created)
        }
        let session = try await client.execute(uri: "/v1/users/me/sessions", method: .post, headers: admin)
        let token = try #require(try jsonObject(session)["token"] as? String)
        let otherSession = try #require(
            try jsonObject(try await client.execute(uri: "/v1/users/u2/sessions", method: .post, headers: admin))["token"] as? String
        )
        let id = try await restore(client)
        try await registerDevice(client, session: token)
        let load = try await client.execute(uri: "/v1/me/channels/feed/collection", method: .get, headers: jsonHeaders(bearer: token))
        let syncToken = try #require(try jsonObject(load)["next_token"] as? String)
        let list = try await client.execute(uri: "/v1/me/channels", method: .get, headers: jsonHeaders(bearer: token))
        let listToken = try #require(try jsonObject(list)["next_token"] as? String)
        let users = ["u1", "u2", "ghost"]
        let credentials = TestCredentials.shared
        var pools: [String: [Any]] = [
            "user_id": users, "targets[]": ["me", "u1", "u2"], "force_push[]": users, "mentioned_user_ids[]": users, "sender_id": ["u1"],
            "channel_url": ["feed", "chat", "nope"], "key": ["plain", "nope"], "template_key": ["plain"],
            "device_token": [device, String(repeating: "cd", count: 32)], "Herald-Device": [device], "device": [device],
            "name": ["main", "other"], "category": ["news"], "token": [syncToken, listToken], "file": ["herald.js", "nope.js"],
            "updateNotification.body": [["variables": ["title": "changed"]]],
            "sendNotification.variables": [["title": "hello"]], "updateNotification.variables": [["title": "changed"]],
            "sendNotification.channel_url": ["feed"], "sendNotification.audience": [OpenAPIRequestGenerator.Absent()],
            "sendNotification.topic": [OpenAPIRequestGenerator.Absent()], "sendNotification.exclude": [OpenAPIRequestGenerator.Absent()],
            "topic_id": ["news", "nope"], "user_ids[]": ["me", "u1", "u2"], "exclude[]": ["u1", "ghost"], "action_id": ["ack", "nope"],
            // Either send_at or deliver_at_local: a rule across fields, so whole bodies too.
            "scheduleSend.channel_url": ["feed"], "scheduleSend.variables": [["title": "later"]],
            "scheduleSend.body": [
                [
                    "channel_url": "feed", "template_key": "plain", "targets": ["me"], "variables": ["title": "later"],
                    "send_at": RFC3339.string(from: Date() + 86_400),
                ],
                [
                    "channel_url": "feed", "template_key": "plain", "audience": "all", "variables": ["title": "later"], "repeat": "weekly",
                    "deliver_at_local": LocalDateTime(Date() + 2 * 86_400, in: LocalDateTime.firstZone).description,
                ],
            ],
            "variants": [OpenAPIRequestGenerator.Absent(), ["de": ["push_title": "Neu"]]],
            "throttle": [OpenAPIRequestGenerator.Absent(), ["limit": 50, "window": "1h"]],
            "batch": [OpenAPIRequestGenerator.Absent(), ["key": "likes", "window": "10m", "alert": "last"]],
            "cover_url": [OpenAPIRequestGenerator.Absent(), "https://example.com/cover.png"],
            "addTopicSubscribers.topic_id": ["news"], "addTopicSubscribers.body": [["user_ids": ["me", "u1"]]],
            // A sync has five optional parameters, each broken now and then: valid values in the pools
            // (and no unknown channel for it) give it a fair chance of being valid throughout.
            "syncCollection.channel_url": ["feed", "chat"], "limit": [50], "wait": [0],
            // So does a page of older ones (its category is the feed's).
            "olderNotifications.channel_url": ["feed"],
            // Only the feed has categories.
            "setCategoryPreference.channel_url": ["feed", "nope"],
            "setCategoryPreference.body": [["inbox": false, "push": true], ["inbox": NSNull()], ["push": NSNull()]],
            "sendNotification.user_variables": [OpenAPIRequestGenerator.Absent()],
            "updateNotification.user_variables": [OpenAPIRequestGenerator.Absent()],
            "sendNotification.body": [
                ["channel_url": "feed", "template_key": "plain", "variables": ["title": "to some"], "targets": ["me", "u2"], "tags": ["a"]],
                [
                    "channel_url": "feed", "template_key": "plain", "variables": ["title": "to all"], "audience": "all",
                    "push": ["alert": true, "text": "hi"],
                ],
                ["channel_url": "feed", "template_key": "plain", "variables": ["title": "to news"], "topic": "news", "exclude": ["u1"]],
            ],
            "updatePushPreferences.body": [
                [
                    "push_trigger_option": "mention_only", "do_not_disturb": true, "start_hour": 22, "start_min": 0, "end_hour": 7, "end_min": 0,
                    "timezone": "Europe/Berlin",
                ],
                ["dnd_schedules": [["day": "monday", "time_windows": [["start_hour": 9, "start_min": 0, "end_hour": 17, "end_min": 30]]]]],
                ["snooze_enabled": false, "push_sound": NSNull()],
            ],
            "putAPNsCredential.body": [
                [
                    "type": "token", "environment": "production", "topic": "com.example.app", "key": credentials.signingKeyPEM,
                    "key_id": credentials.keyID, "team_id": credentials.teamID,
                ],
                [
                    "type": "certificate", "environment": "production", "p12": Data(credentials.p12).base64EncodedString(),
                    "password": credentials.certificatePassword,
                ],
            ],
            "addDevice.body": [
                ["service": "apns", "token": String(repeating: "ef", count: 32), "environment": "sandbox", "topic": "com.example.app"],
                ["service": "fcm", "token": "fcm-generated-token:APA91b-0123456789", "unique": true],
                [
                    "service": "webpush",
                    "subscription": [
                        "endpoint": "https://fcm.googleapis.com/fcm/send/generated", "expirationTime": NSNull(),
                        "keys": ["p256dh": Base64URL.encode(P256Key().publicPoint), "auth": Base64URL.encode(SecureRandom.bytes(16))],
                    ],
                ],
            ],
            "putFCMCredential.body": [fcmKeyFile],
            "putWebPushKey.body": [["private_key": vapidKey.pem]],
            "putAPNsCredential.type": ["token"], "putAPNsCredential.key": [credentials.signingKeyPEM],
            "key_id": [credentials.keyID], "team_id": [credentials.teamID], "environment": ["sandbox", "production"],
            // Erasures take a user of their own (put back by `restore`): erasing the session's user
            // would leave every later user request refused.
            "retention": ["90d", "12h", NSNull()],
            "putWebhook.body": [
                ["url": "http://127.0.0.1:9/hooks", "events": ["notification.read"], "secret": String(repeating: "s", count: 32)],
                ["url": "https://example.com/hooks", "events": ["push.failed", "user.erased"], "batch_size": 10],
            ], "eraseUser.user_id": ["doomed", "ghost"], "getErasure.user_id": ["doomed", "ghost"],
        ]
        pointPools(&pools, at: id)
        return Fixtures(session: token, otherSession: otherSession, pools: pools)
    }

    /// Registers the fixtures' device for the session user (again, if a request removed it).
    static func registerDevice(_ client: some TestClientProtocol, session: String) async throws {
        let registered = try await client.execute(
            uri: "/v1/me/devices/\(device)",
            method: .put,
            headers: jsonHeaders(bearer: session),
            body: ByteBuffer(string: #"{"environment":"sandbox","topic":"com.example.app"}"#)
        )
        #expect(registered.status.code < 300, "\(String(buffer: registered.body))")
    }

    /// A fresh sync token of the session user's feed.
    static func syncToken(_ client: some TestClientProtocol, session: String) async throws -> String {
        let load = try await client.execute(uri: "/v1/me/channels/feed/collection", method: .get, headers: jsonHeaders(bearer: session))
        return try #require(try jsonObject(load)["next_token"] as? String)
    }

    /// Points the pools that name a notification at `ids` (the session user's).
    static func pointPools(_ pools: inout [String: [Any]], at ids: [String]) {
        // The last id is the scheduled send's.
        pools["scheduled_send_id"] = [ids.last!, "999999"]
        let ids = Array(ids.dropLast())
        pools["notification_id"] = ids + ["999999"]
        pools["ids[]"] = ids
        pools["notification_ids[]"] = ids
        pools["markDelivered.herald"] = ids.map { ["type": "refresh", "notification_id": $0] }
    }

    /// Puts the user that erasures take, the channels, the template and the credential back as the fixtures made them (no-ops
    /// when unchanged), and sends the session user three notifications (a generated request may
    /// delete one); returns their ids.
    static func restore(_ client: some TestClientProtocol) async throws -> [String] {
        let admin = jsonHeaders(bearer: adminToken)
        #expect(try await client.execute(uri: "/v1/users/doomed", method: .put, headers: admin).status.code < 300)
        let webhook = try await client.execute(
            uri: "/v1/webhooks/main",
            method: .put,
            headers: admin,
            body: ByteBuffer(
                string: #"{"url":"http://127.0.0.1:9/hooks","events":["notification.read"],"secret":"\#(String(repeating: "s", count: 32))"}"#
            )
        )
        #expect(webhook.status.code < 300, "\(String(buffer: webhook.body))")
        for (url, body) in [
            ("feed", #"{"kind":"feed","name":"Feed","categories":[{"id":"news","name":"News","is_default":true}]}"#),
            ("chat", #"{"kind":"chat","name":"Chat"}"#),
        ] {
            let put = try await client.execute(uri: "/v1/channels/\(url)", method: .put, headers: admin, body: ByteBuffer(string: body))
            if put.status == .conflict {
                // Made again with the other kind by a generated request: delete it and make it ours.
                _ = try await client.execute(uri: "/v1/channels/\(url)", method: .delete, headers: admin)
                _ = try await client.execute(uri: "/v1/channels/\(url)", method: .put, headers: admin, body: ByteBuffer(string: body))
            }
        }
        let template = try await client.execute(
            uri: "/v1/templates/plain",
            method: .put,
            headers: admin,
            body: ByteBuffer(
                string:
                    #"{"name":"Plain","variables":[{"name":"title","type":"string","required":true}],"data":{"title":"{{title}}"},"actions":[{"id":"ack","label":"Got it"}]}"#
            )
        )
        #expect(template.status.code < 300, "\(String(buffer: template.body))")
        let credentials = TestCredentials.shared
        let credential = try await client.execute(
            uri: "/v1/apns/credentials/main",
            method: .put,
            headers: admin,
            body: ByteBuffer(
                bytes: try JSONSerialization.data(withJSONObject: [
                    "type": "token", "environment": "sandbox", "topic": "com.example.app", "key": credentials.signingKeyPEM,
                    "key_id": credentials.keyID, "team_id": credentials.teamID,
                ])
            )
        )
        #expect(credential.status.code < 300, "\(String(buffer: credential.body))")
        let fcm = try await client.execute(
            uri: "/v1/fcm/credentials/main",
            method: .put,
            headers: admin,
            body: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: fcmKeyFile))
        )
        #expect(fcm.status.code < 300, "\(String(buffer: fcm.body))")
        // A topic users may follow, which the session user follows.
        let topic = try await client.execute(
            uri: "/v1/topics/news",
            method: .put,
            headers: admin,
            body: ByteBuffer(string: #"{"name":"News","self_subscribe":true}"#)
        )
        #expect(topic.status.code < 300, "\(String(buffer: topic.body))")
        let subscribed = try await client.execute(
            uri: "/v1/topics/news/subscribers",
            method: .post,
            headers: admin,
            body: ByteBuffer(string: #"{"user_ids":["me","u1"]}"#)
        )
        #expect(subscribed.status == .ok, "\(String(buffer: subscribed.body))")
        var ids: [String] = []
        for _ in 0..<3 {
            let sent = try await client.execute(
                uri: "/v1/notifications",
                method: .post,
                headers: admin,
                body: ByteBuffer(string: #"{"channel_url":"feed","template_key":"plain","variables":{"title":"hello"},"targets":["me","u1"]}"#)
            )
            #expect(sent.status == .created, "\(String(buffer: sent.body))")
            ids.append(try #require(try jsonObject(sent)["id"] as? String))
        }
        let scheduled = try await client.execute(
            uri: "/v1/scheduled-sends",
            method: .post,
            headers: admin,
            body: ByteBuffer(
                string:
                    #"{"channel_url":"feed","template_key":"plain","variables":{"title":"later"},"targets":["me"],"send_at":"\#(RFC3339.string(from: Date() + 86_400))"}"#
            )
        )
        #expect(scheduled.status == .created, "\(String(buffer: scheduled.body))")
        return ids + [try #require(try jsonObject(scheduled)["id"] as? String)]
    }
}
