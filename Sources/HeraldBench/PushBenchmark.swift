import APNs
import ArgumentParser
import ChildProcess
import Foundation
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Logging
import Postgres

/// The `push` case: (a) the APNs client alone against `nghttpd`, beside `h2load` posting the same
/// request to the same server; (b) end to end, queued refresh pushes to distinct devices through the
/// outbox and dispatcher to the mock APNs server.
struct PushBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "APNs client versus h2load on nghttpd, and outbox-to-APNs refresh pushes end to end."
    )

    @Option(help: "Pushes for the client-alone case (a).")
    var pushes: Int = 200_000

    @Option(help: "Devices for the end-to-end case (b); 0 skips it.")
    var devices: Int = 100_000

    @Option(help: "Devices the dispatcher claims (and outbox recipients it expands) at a time in (b).")
    var batchSize: Int = 5_000

    @Option(help: "Pushes in flight at once (the client) and streams per connection (servers).")
    var concurrency: Int = 100

    @Option(help: "PostgreSQL URI or conninfo for (b); default: a private cluster in a temporary directory.")
    var databaseURL: String?

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
        try await waitForServer(url: url, trustRoot: credentials.serverCertificateFile)

        let key = try ES256Key(pem: credentials.signingKeyPEM)
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

    private func waitForServer(url: String, trustRoot: String) async throws {
        for _ in 0..<100 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(url.split(separator: ":").last.flatMap { Int($0) } ?? 0).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(descriptor)
            if connected == 0 { return }
            try await Task.sleep(for: .milliseconds(50))  // a server starting up, not synchronisation between our own tasks
        }
        throw ValidationError("nghttpd did not start")
    }

    // MARK: - (b) end to end

    private func endToEnd() async throws {
        let credentials = TestCredentials.shared
        let database = try await BenchDatabase.open(databaseURL: databaseURL)
        defer { database.close() }
        let key = try ES256Key(pem: credentials.signingKeyPEM)
        let mock = try await MockAPNsServer.start(
            authentication: .token(publicKeyPEM: key.publicKeyPEM, keyID: credentials.keyID, teamID: credentials.teamID),
            maxConcurrentStreams: 1000
        )
        let devices = self.devices
        try await database.withFreshHeraldDatabase("herald_push_bench", connections: 8) { client, _, _, logger in
            print("")
            print("Creating \(devices) users, each with one device and one queued refresh…")
            try await client.query("INSERT INTO users (id) SELECT 'user-' || g FROM generate_series(1, \(devices)) AS g")
            try await client.query(
                """
                INSERT INTO devices (user_key, token, environment, topic)
                SELECT key, lpad(to_hex(key), 64, '0'), 'sandbox', 'com.example.herald' FROM users
                """
            )
            _ = try await ChannelStore(client: client).put(HeraldCore.Channel(url: "news", kind: .feed, name: "News"))
            _ = try await TemplateStore(client: client).put(Template(key: "plain", name: "Plain", variables: [], data: .object([:])))
            try await client.query(
                """
                WITH n AS (
                    INSERT INTO notifications (channel_key, template_key, template_version, data, audience, audience_size, recipient_count)
                    VALUES (1, 'plain', 1, '{}', 'targets', \(devices), \(devices)) RETURNING id
                ), r AS (
                    INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid)
                    SELECT u.key, 1, n.id, pg_current_xact_id()::text::bigint FROM users u, n
                )
                INSERT INTO push_outbox (notification_id) SELECT id FROM n
                """
            )
            try await client.query("ANALYZE")
            let box = try SecretBox(key: SecureRandom.bytes(32))
            _ = try await APNsCredentialStore(client: client, box: box).put(
                APNsCredentialInfo(
                    name: "bench",
                    kind: .token,
                    environment: "sandbox",
                    topic: "com.example.herald",
                    keyID: credentials.keyID,
                    teamID: credentials.teamID,
                    certificateExpiresAt: nil,
                    createdAt: Date(),
                    updatedAt: Date()
                ),
                secret: Array(credentials.signingKeyPEM.utf8),
                password: nil
            )
            var settings = PushSettings()
            settings.apnsURL = mock.baseURL
            settings.apnsCAFile = mock.trustRootFile
            settings.minimumInterval = .zero
            settings.batchSize = batchSize
            settings.concurrency = concurrency
            let dispatcher = PushDispatcher(client: client, box: box, settings: settings, listener: nil, logger: logger)
            let clock = ContinuousClock()
            let start = clock.now
            let rounds = try await dispatcher.runUntilIdle()
            let seconds = elapsedSeconds(clock.now - start)
            await dispatcher.shutdownTransport()
            let answered = mock.requests.filter { $0.status == 200 }.count
            let outstanding = try await client.query("SELECT count(*) FROM devices WHERE refresh_outstanding")[0].decode(Int64.self)
            guard answered == devices, outstanding == devices else {
                throw ValidationError(
                    "expected \(devices) delivered pushes, the mock answered \(answered) with 200 and \(outstanding) devices are marked"
                )
            }
            print("(b) end to end: \(devices) refresh pushes to distinct devices, outbox → dispatcher → mock APNs (TLS, JWT checked):")
            print("| devices | rounds | seconds | pushes/s |")
            print("|---:|---:|---:|---:|")
            print("| \(devices) | \(rounds) | \(format(seconds, digits: 2)) | \(format(Double(devices) / seconds)) |")
        }
        await mock.shutdown()
    }
}
