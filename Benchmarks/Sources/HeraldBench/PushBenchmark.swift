import APNs
import ArgumentParser
import AsyncHTTPClient
import ChildProcess
import Foundation
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Logging
import NIOCore
import NIOHTTP1
import Postgres
import WebPush

/// The `push` case: (a) the APNs client alone against `nghttpd`, beside `h2load` posting the same
/// request to the same server; (b) end to end, one send to many users through `herald serve` —
/// fan-out, outbox, dispatcher — to a sink for each push service measured (the mocks, nginx, or any
/// URL for APNs).
struct PushBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "APNs client versus h2load on nghttpd, and outbox-to-service refresh pushes end to end (APNs, FCM, Web Push)."
    )

    @Option(help: "Pushes for the client-alone case (a).")
    var pushes: Int = 200_000

    @Option(help: "Devices for the end-to-end case (b); 0 skips it.")
    var devices: Int = 100_000

    @Option(help: "Devices the dispatcher claims (and outbox recipients it expands) at a time in (b); default: the server's.")
    var batchSize: Int?

    @Option(help: "Pushes in flight at once (the client) and streams per connection (servers) in (a).")
    var concurrency: Int = 100

    @Option(help: "Pushes in flight per APNs connection in (b) (HERALD_PUSH_STREAMS); default: the server's.")
    var streams: Int?

    @Option(help: "PostgreSQL URI or conninfo for (b); default: a private cluster in a temporary directory.")
    var databaseURL: String?

    @Option(help: "Where (b) sends: mock (the test support's APNs mock, in this process) or nginx (answers 200; apt-get install nginx-light).")
    var sink: Sink = .mock

    @Option(help: "Send (b) to this APNs base URL instead (any HTTP/2 server over TLS answering 200); needs --apns-ca-file.")
    var apnsURL: String?

    @Option(help: "PEM file of trust roots for --apns-url.")
    var apnsCAFile: String?

    @Option(name: .customLong("service"), help: "The push service (b) measures: apns, fcm or webpush; repeat it to measure several in one run.")
    var services: [Service] = [.apns]

    @Flag(help: "After (b), list the statements PostgreSQL spent most time on (pg_stat_statements; private cluster only).")
    var statements = false

    static let token = String(repeating: "ab", count: 32)
    static let payload = Array(#"{"aps":{"content-available":1},"herald":{"type":"refresh","channels":[],"badge":0}}"#.utf8)

    func run() async throws {
        if pushes > 0 { try await clientAlone() }
        if devices > 0 { try await endToEnd() }
    }

    // MARK: - (a) the client alone

    private func clientAlone() async throws {
        let credentials = TestCredentials.shared
        guard let nghttpd = ["/usr/sbin/nghttpd", "/usr/bin/nghttpd"].first(where: FileManager.default.isExecutableFile),
            let h2load = ["/usr/bin/h2load"].first(where: FileManager.default.isExecutableFile)
        else { throw ValidationError("nghttpd and h2load are needed: apt-get install nghttp2-server nghttp2-client") }
        let root = credentials.directory + "/docroot"
        try FileManager.default.createDirectory(atPath: root + "/3/device", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: root + "/3/device/" + Self.token, contents: Data())
        let port = 20_000 + Int(getpid() % 10_000)
        let server = try ChildProcess.spawn(
            [nghttpd, "-d", root, "-m", "\(concurrency)", "\(port)", credentials.serverKeyFile, credentials.serverCertificateFile],
            environment: ["PATH=/usr/bin:/bin"],
            output: .file(credentials.directory + "/nghttpd.log")
        )
        defer {
            kill(server.pid, SIGTERM)
            _ = server.wait()
        }
        let url = "https://127.0.0.1:\(port)"
        try await waitForServer(port: port)

        let key = try P256Key(pem: credentials.signingKeyPEM)
        let client = try APNsClient(
            configuration: .init(
                baseURL: url,
                additionalTrustRootFiles: [credentials.serverCertificateFile],
                connections: 1,
                maximumInFlight: concurrency
            ),
            authentication: .token(ProviderTokenCache(key: key, keyID: credentials.keyID, teamID: credentials.teamID))
        )
        let push = APNsPush(
            deviceToken: Self.token,
            topic: "com.example.herald",
            pushType: "background",
            priority: 5,
            expiration: 0,
            collapseID: nil,
            payload: Self.payload
        )
        _ = await client.send(push)  // connect and negotiate before the clock starts
        let clock = ContinuousClock()
        let start = clock.now
        // As the dispatcher sends: batches of 5,000, the client keeping `concurrency` streams open.
        var delivered = 0
        var remaining = pushes
        while remaining > 0 {
            let batch = min(remaining, 5_000)
            delivered += await client.send(Array(repeating: push, count: batch)).filter { $0.result.outcome == .delivered }.count
            remaining -= batch
        }
        let seconds = elapsedSeconds(clock.now - start)
        await client.shutdown()
        guard delivered == pushes else { throw ValidationError("only \(delivered) of \(pushes) pushes were answered 200") }

        // h2load: the same request (headers, body) to the same server, one connection, same streams.
        let bodyFile = credentials.directory + "/payload.json"
        _ = FileManager.default.createFile(atPath: bodyFile, contents: Data(Self.payload))
        let output = credentials.directory + "/h2load.out"
        try? FileManager.default.removeItem(atPath: output)
        let token = ProviderTokenCache(key: key, keyID: credentials.keyID, teamID: credentials.teamID).current().value
        let status = try ChildProcess.run(
            [
                h2load, "-n", "\(pushes)", "-c", "1", "-m", "\(concurrency)", "-d", bodyFile,
                "-H", "authorization: bearer \(token)", "-H", "apns-push-type: background", "-H", "apns-priority: 5",
                "-H", "apns-topic: com.example.herald", "-H", "apns-expiration: 0", "-H", "content-type: application/json",
                "\(url)/3/device/\(Self.token)",
            ],
            environment: ["PATH=/usr/bin:/bin"],
            outputPath: output
        )
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard status == 0, let line = text.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
            let rateText = line.split(separator: ",").dropFirst().first?.split(separator: " ").first, let h2Rate = Double(rateText)
        else { throw ValidationError("h2load failed:\n\(text)") }
        let rate = Double(pushes) / seconds
        print("")
        print("(a) APNs client alone, \(pushes) pushes over TLS to nghttpd, \(concurrency) streams:")
        print("| sender | pushes/s | ÷ h2load |")
        print("|---|---:|---:|")
        print("| Herald APNsClient | \(format(rate)) | \(format(rate / h2Rate * 100)) % |")
        print("| h2load | \(format(h2Rate)) | 100 % |")
    }

    private func waitForServer(port: Int) async throws {
        for _ in 0..<100 {
            if try LoopbackPort.isListening(port) { return }
            try await Task.sleep(for: .milliseconds(50))  // a server starting up, not synchronisation between our own tasks
        }
        throw ValidationError("nghttpd did not start")
    }

    // MARK: - (b) end to end

    /// Where (b) sends its pushes.
    enum Sink: String, ExpressibleByArgument {
        /// The test support's mock of each service in this process (TLS, HTTP/2; APNs' provider token
        /// and headers checked, FCM's OAuth, every Web Push payload decrypted).
        case mock
        /// nginx answering `200` to everything (`NginxSink`): a sink much faster than the mocks.
        case nginx
    }

    /// The push services (b) can measure.
    enum Service: String, ExpressibleByArgument, CaseIterable {
        case apns, fcm, webpush
    }

    /// What one service's run of (b) measured.
    struct Row {
        var service: Service
        var fannedOut: Double
        var seconds: Double
        var cpu: CPUMeter.PerRequest
        var busy: Double
    }

    /// (b): `herald serve` as a process of its own, `devices` users with a device each of one service;
    /// one send to all of them through the API, timed from the request until every device is
    /// recorded as pushed (fan-out, outbox, dispatcher, the service's answers). CPU per push from
    /// `/proc`: Herald's process, the PostgreSQL server's, and the whole machine's (the sink and this
    /// process included). Each service in turn, on a fresh database, to the same kind of sink.
    private func endToEnd() async throws {
        var rows: [Row] = []
        for service in services {
            rows.append(try await endToEnd(service))
        }
        let sinkName = apnsURL ?? (sink == .nginx ? "nginx (`return 200`)" : "the mock services (TLS; JWT, OAuth checked, Web Push decrypted)")
        print("")
        print("(b) end to end: one send to \(devices) users, each with a device, through `herald serve` to \(sinkName):")
        print("| service | devices | fan-out done s | all pushed s | pushes/s | Herald µs/push | PostgreSQL µs/push | rest µs/push | machine busy |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in rows {
            print(
                "| \(row.service.rawValue) | \(devices) | \(format(row.fannedOut, digits: 2)) | \(format(row.seconds, digits: 2)) "
                    + "| \(format(Double(devices) / row.seconds)) | \(format(row.cpu.herald)) | \(format(row.cpu.postgres ?? 0)) "
                    + "| \(format(row.cpu.rest)) | \(format(row.busy)) % |"
            )
        }
        if services.contains(.webpush) { cryptoAlone() }
    }

    /// Web Push's cryptography alone, on one thread: what a push costs before any I/O (a fresh key
    /// pair, an ECDH, the HKDFs and AES-128-GCM; the VAPID signature is made once per push service).
    private func cryptoAlone() {
        let receiver = P256Key()
        let (point, auth) = (receiver.publicPoint, SecureRandom.bytes(16))
        let payload = RefreshPayload.make(channels: [("news", 1)], badge: 1, format: .web)
        let count = 20_000
        let clock = ContinuousClock()
        let start = clock.now
        var bytes = 0
        for _ in 0..<count {
            bytes += (try? WebPushPayload.encrypt(payload, p256dh: point, auth: auth).count) ?? 0
        }
        let seconds = elapsedSeconds(clock.now - start)
        precondition(bytes > count * payload.count, "encryption failed")
        print("")
        print(
            "Web Push encryption alone (aes128gcm, \(payload.count)-byte refresh, one thread): \(format(seconds / Double(count) * 1e6, digits: 1)) µs per push"
        )
    }

    private func endToEnd(_ service: Service) async throws -> Row {
        let credentials = TestCredentials.shared
        var mocks: (apns: MockAPNsServer?, fcm: MockFCMServer?, webPush: MockWebPushService?) = (nil, nil, nil)
        var nginx: NginxSink?
        let target: (url: String, trustRoots: String)
        if let apnsURL {
            guard let apnsCAFile, service == .apns else { throw ValidationError("--apns-url needs --apns-ca-file, and measures APNs only") }
            target = (apnsURL, apnsCAFile)
        } else if sink == .nginx {
            let started = try await NginxSink.start(
                port: try SoakDeployment.freePort(),
                certificateFile: credentials.serverCertificateFile,
                keyFile: credentials.serverKeyFile,
                streams: 1000,
                directory: credentials.directory
            )
            nginx = started
            target = (started.url, started.trustRootFile)
        } else {
            switch service {
            case .apns:
                let key = try P256Key(pem: credentials.signingKeyPEM)
                let started = try await MockAPNsServer.start(
                    authentication: .token(publicKeyPEM: key.publicKeyPEM, keyID: credentials.keyID, teamID: credentials.teamID),
                    maxConcurrentStreams: 1000
                )
                mocks.apns = started
                target = (started.baseURL, started.trustRootFile)
            case .fcm:
                let started = try await MockFCMServer.start(
                    publicKeyPEM: Self.fcmKey.publicKeyPEM,
                    clientEmail: Self.fcmEmail,
                    keyID: "key-1",
                    projectID: Self.fcmProject
                )
                mocks.fcm = started
                target = (started.baseURL, started.trustRootFile)
            case .webpush:
                let started = try await MockWebPushService.start()
                mocks.webPush = started
                target = (started.origin, started.trustRootFile)
            }
        }
        defer { nginx?.stop() }
        let database = try await BenchDatabase.open(
            databaseURL: databaseURL,
            settings: statements ? ["shared_preload_libraries = 'pg_stat_statements'", "pg_stat_statements.track = all"] : []
        )
        defer { database.close() }
        let devices = self.devices
        var row: Row?
        try await database.withFreshHeraldDatabase("herald_push_bench", connections: 2) { client, http, conninfo, _ in
            print("")
            print("\(service.rawValue): creating \(devices) users, each with one device…")
            try await client.query("INSERT INTO users (id) SELECT 'user-' || g FROM generate_series(1, \(devices)) AS g")
            _ = try await ChannelStore(client: client).put(HeraldCore.Channel(url: "news", kind: .feed, name: "News"))
            let template = Template(
                key: "plain",
                name: "Plain",
                variables: [.init(name: "title", type: .string, required: true)],
                data: .object(["title": .string("{{title}}")])
            )
            _ = try await TemplateStore(client: client).put(template)
            let server = try await ServeProcess.start(
                conninfo: conninfo,
                adminToken: Self.adminToken,
                environment: [
                    "HERALD_APNS_URL": target.url, "HERALD_APNS_CA_FILE": target.trustRoots,
                    "HERALD_FCM_URL": target.url, "HERALD_PUSH_CA_FILE": target.trustRoots,
                    "HERALD_VAPID_SUBJECT": "mailto:bench@example.com", "HERALD_WEBPUSH_HOSTS": "127.0.0.1",
                ]
                .merging(batchSize.map { ["HERALD_PUSH_BATCH_SIZE": String($0)] } ?? [:]) { $1 }
                .merging(streams.map { ["HERALD_PUSH_STREAMS": String($0)] } ?? [:]) { $1 }
            )
            do {
                try await addDevices(service, client: client, http: http, base: "http://127.0.0.1:\(server.port)", target: target.url, mocks: mocks)
                try await client.query("VACUUM ANALYZE")
                try await client.query("CHECKPOINT")
                row = try await measure(service, server: server, client: client, http: http, mocks: mocks)
            } catch {
                server.process.signal(SIGKILL)
                throw error
            }
            server.process.signal(SIGTERM)
            _ = try? await server.process.waitForExit()
        }
        await mocks.apns?.shutdown()
        await mocks.fcm?.shutdown()
        await mocks.webPush?.shutdown()
        guard let row else { throw ValidationError("\(service.rawValue): no measurement") }
        return row
    }

    static let fcmKey = RS256Key()
    static let fcmProject = "herald-bench"
    static let fcmEmail = "herald@herald-bench.iam.gserviceaccount.com"

    /// The service's credential through the API, and a device of it for every user, written directly.
    private func addDevices(
        _ service: Service,
        client: PostgresClient,
        http: HTTPClient,
        base: String,
        target: String,
        mocks: (apns: MockAPNsServer?, fcm: MockFCMServer?, webPush: MockWebPushService?)
    ) async throws {
        let credentials = TestCredentials.shared
        switch service {
        case .apns:
            let key = [
                "type": "token", "environment": "sandbox", "topic": "com.example.herald", "key": credentials.signingKeyPEM,
                "key_id": credentials.keyID, "team_id": credentials.teamID,
            ]
            _ = try await Self.call(http, .PUT, base + "/v1/apns/credentials/bench", JSONSerialization.data(withJSONObject: key))
            try await client.query(
                """
                INSERT INTO devices (user_key, token, environment, topic)
                SELECT key, lpad(to_hex(key), 64, '0'), 'sandbox', 'com.example.herald' FROM users
                """
            )
        case .fcm:
            let keyFile = MockFCMServer.keyFile(tokenURI: target + "/token", key: Self.fcmKey, projectID: Self.fcmProject, email: Self.fcmEmail)
            _ = try await Self.call(http, .PUT, base + "/v1/fcm/credentials/bench", Data(keyFile))
            try await client.query(
                "INSERT INTO devices (user_key, service, token, environment, topic) SELECT key, 'fcm', 'bench-fcm-' || key, '', '' FROM users"
            )
        case .webpush:
            if let mock = mocks.webPush {
                // The mock holds each subscription's private key, as a browser does, and decrypts every push.
                let answer = try await Self.call(http, .GET, base + "/v1/webpush/key", Data())
                guard let key = (answer["public_key"] as? String).flatMap(Base64URL.decode) else { throw ValidationError("no VAPID key") }
                let keys = try await client.query("SELECT key FROM users ORDER BY key").map { try $0.decode(Int64.self) }
                for chunk in stride(from: 0, to: keys.count, by: 5_000) {
                    let users = Array(keys[chunk..<min(chunk + 5_000, keys.count)])
                    let subscriptions = users.map { _ in mock.subscribe(applicationServerKey: key) }
                    try await client.query(
                        """
                        INSERT INTO devices (user_key, service, token, environment, topic, webpush_p256dh, webpush_auth)
                        SELECT u, 'webpush', e, '', '', decode(p, 'base64'), decode(a, 'base64')
                        FROM unnest(\(users)::int8[], \(subscriptions.map(\.endpoint))::text[], \(subscriptions.map { Self.base64($0.p256dh) })::text[],
                            \(subscriptions.map { Self.base64($0.auth) })::text[]) AS s(u, e, p, a)
                        """
                    )
                }
            } else {
                // Any subscription keys will do for a sink that does not decrypt: every push is still
                // encrypted for them, with a fresh key of its own.
                let point = PostgresBytes(P256Key().publicPoint)
                let auth = PostgresBytes(SecureRandom.bytes(16))
                try await client.query(
                    """
                    INSERT INTO devices (user_key, service, token, environment, topic, webpush_p256dh, webpush_auth)
                    SELECT key, 'webpush', \(target) || '/push/' || key, '', '', \(point), \(auth) FROM users
                    """
                )
            }
        }
        try await client.query("INSERT INTO device_push_state (device_id, service) SELECT id, service FROM devices")
    }

    /// Base64url (unpadded) as standard base64, for PostgreSQL's `decode`.
    static func base64(_ text: String) -> String {
        Data(Base64URL.decode(text) ?? []).base64EncodedString()
    }

    private func measure(
        _ service: Service,
        server: ServeProcess,
        client: PostgresClient,
        http: HTTPClient,
        mocks: (apns: MockAPNsServer?, fcm: MockFCMServer?, webPush: MockWebPushService?)
    ) async throws -> Row {
        let devices = self.devices
        let base = "http://127.0.0.1:\(server.port)"
        if statements {
            try await client.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            try await client.query("SELECT pg_stat_statements_reset()")
        }
        var meter = await CPUMeter.locate(client)
        meter.herald = server.process.pid
        let before = await meter.read()
        let clock = ContinuousClock()
        let start = clock.now
        let body = #"{"channel_url":"news","template_key":"plain","audience":"all","variables":{"title":"Herald 2.0 is out"}}"#
        let sent = try await Self.call(http, .POST, base + "/v1/notifications", Data(body.utf8))
        guard let id = (sent["id"] as? String).flatMap({ Int64($0) }) else { throw ValidationError("the send answered no id") }
        var fannedOut: Duration?
        var pushed: Int64 = 0
        let deadline = clock.now + .seconds(600)
        while pushed < devices {
            guard clock.now < deadline else { throw ValidationError("after 600 s only \(pushed) of \(devices) devices were pushed") }
            // One row's read every 20 ms (the notification counts the pushes recorded for it): well
            // under the resolution reported, and nothing beside the work measured.
            try await Task.sleep(for: .milliseconds(20))
            let (state, count) = try await client.query("SELECT fanout_state, pushes_sent FROM notifications WHERE id = \(id)")[0].decode(
                (String, Int64).self
            )
            if fannedOut == nil, state == "done" { fannedOut = clock.now - start }
            pushed = count
            if let failure = try await client.query("SELECT reason FROM push_failures LIMIT 1").first {
                throw ValidationError("\(service.rawValue): a push failed: \(try failure.decode(String.self))")
            }
        }
        let seconds = elapsedSeconds(clock.now - start)
        let after = await meter.read(after: before)
        let cpu = CPUMeter.perRequest(from: before, to: after, requests: Double(devices))
        let busy = (after.machine - before.machine) / seconds / Double(ProcessInfo.processInfo.activeProcessorCount) * 100
        let outstanding = try await client.query("SELECT count(*) FROM device_push_state WHERE outstanding")[0].decode(Int64.self)
        guard outstanding == devices else { throw ValidationError("\(outstanding) of \(devices) devices are marked as pushed") }
        let answered =
            mocks.apns.map { $0.requests.filter { $0.status == 200 }.count } ?? mocks.fcm.map { $0.messages.count }
            ?? mocks.webPush.map { $0.pushes.filter { $0.status == 201 && $0.plaintext != nil }.count }
        if let answered, answered != devices {
            throw ValidationError("the mock accepted \(answered) of \(devices) pushes")
        }
        if statements { try await printStatements(client, pushes: devices) }
        return Row(service: service, fannedOut: fannedOut.map(elapsedSeconds) ?? seconds, seconds: seconds, cpu: cpu, busy: busy)
    }

    /// The statements of the run by total execution time, per push.
    private func printStatements(_ client: PostgresClient, pushes: Int) async throws {
        let rows = try await client.query(
            """
            SELECT calls, total_exec_time, rows, regexp_replace(left(query, 110), '\\s+', ' ', 'g') FROM pg_stat_statements
            WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 15
            """
        )
        print("")
        print("| statement | calls | ms total | µs per push | rows |")
        print("|---|---:|---:|---:|---:|")
        for row in rows {
            let (calls, milliseconds, count, text) = try row.decode((Int64, Double, Int64, String).self)
            print("| `\(text)` | \(calls) | \(format(milliseconds)) | \(format(milliseconds * 1000 / Double(pushes), digits: 1)) | \(count) |")
        }
    }

    static let adminToken = "herald-bench-admin-token-0123456789"

    /// One admin request; its JSON answer, or an error naming the status when it is not a success.
    private static func call(_ http: HTTPClient, _ method: HTTPMethod, _ url: String, _ body: Data) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(adminToken)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await http.execute(request, timeout: .seconds(120))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        guard (200..<300).contains(Int(response.status.code)) else {
            throw ValidationError("\(method) \(url) answered \(response.status.code): \(String(buffer: bytes))")
        }
        return (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView)) as? [String: Any]) ?? [:]
    }
}
