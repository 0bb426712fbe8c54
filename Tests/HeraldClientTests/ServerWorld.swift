import APNs
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Postgres
import Synchronization
import Testing

@testable import HeraldClient

/// A real `herald serve` on a throwaway database, with the mock APNs as its push service, channels
/// `feed` (categories `news` default, `promo`) and `chat`, a template `plain`, and users with sessions:
/// what an app's client talks to.
final class ServerWorld: Sendable {
    static let adminToken = "test-admin-token-client-012345678"
    static let topic = "com.example.herald.client"

    /// The server's database (the primary, when there is a standby).
    let database: PostgresClient
    /// The standby the server reads on, if any.
    let standby: PostgresClient?
    let mock: MockAPNsServer
    let environment: [String: String]
    /// The server's port, the same across restarts.
    let port: Int
    let process: Mutex<HeraldProcess?>
    let sessions: [String: String]

    var serverURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Runs `body` with a world; the server is killed and the mock stopped afterwards.
    static func with(
        users: [String] = ["u1", "u2"],
        settings: [String: String] = [:],
        _ body: @MainActor @Sendable (ServerWorld) async throws -> Void
    ) async throws {
        try await TestPostgres.withDatabase(cluster: .client) { (db: TestDatabase) async throws in
            try await run(database: db.client, standby: nil, environment: db.heraldEnvironment, users: users, settings: settings, body)
        }
    }

    /// A world whose server reads on a hot standby (`HERALD_READ_DATABASE_URL`) whose replay is held
    /// back by `applyDelay`.
    static func withStandby(
        applyDelay: Duration,
        users: [String] = ["u1", "u2"],
        _ body: @MainActor @Sendable (ServerWorld) async throws -> Void
    ) async throws {
        try await TestPostgres.withStandby(applyDelay: applyDelay) { primary, standby in
            let client = PostgresClient(configuration: .init(conninfo: primary.conninfo(), maximumConnections: 2))
            let reader = PostgresClient(configuration: .init(conninfo: standby.conninfo(), maximumConnections: 1, metricsPrefix: "herald_read_db"))
            do {
                try await run(
                    database: client,
                    standby: reader,
                    environment: ["DATABASE_URL": primary.conninfo()],
                    users: users,
                    settings: ["HERALD_READ_DATABASE_URL": standby.conninfo(), "HERALD_READ_MAX_LAG": "60s"],
                    body
                )
            } catch {
                await client.shutdown()
                await reader.shutdown()
                throw error
            }
            await client.shutdown()
            await reader.shutdown()
        }
    }

    private static func run(
        database: PostgresClient,
        standby: PostgresClient?,
        environment databaseEnvironment: [String: String],
        users: [String],
        settings: [String: String],
        _ body: @MainActor @Sendable (ServerWorld) async throws -> Void
    ) async throws {
        let credentials = TestCredentials.shared
        let key = try P256Key(pem: credentials.signingKeyPEM)
        let mock = try await MockAPNsServer.start(
            authentication: .token(publicKeyPEM: key.publicKeyPEM, keyID: credentials.keyID, teamID: credentials.teamID)
        )
        var environment = [
            "HERALD_SECRET_KEY": Hex.encode(SecureRandom.bytes(32)), "HERALD_ADMIN_TOKEN": adminToken,
            "HERALD_APNS_URL": mock.baseURL, "HERALD_APNS_CA_FILE": mock.trustRootFile, "HERALD_REFRESH_MIN_INTERVAL": "0s",
            // The model tests replay histories as fast as the machine goes, far above what one app
            // sends; the limits have tests of their own.
            "HERALD_RATE_LIMIT_SESSION": "off", "HERALD_RATE_LIMIT_ADDRESS": "off",
        ]
        environment.merge(databaseEnvironment) { $1 }
        environment.merge(settings) { $1 }
        let process: HeraldProcess
        let port: Int
        do {
            (process, port) = try await Self.start(environment: environment, port: 0)
        } catch {
            await mock.shutdown()
            throw error
        }
        let world = ServerWorld(
            database: database,
            standby: standby,
            mock: mock,
            environment: environment,
            port: port,
            process: process,
            sessions: [:]
        )
        do {
            let sessions = try await world.seed(users: users)
            let ready = ServerWorld(
                database: database,
                standby: standby,
                mock: mock,
                environment: environment,
                port: port,
                process: world.process.withLock { $0 },
                sessions: sessions
            )
            try await body(ready)
            ready.kill()
        } catch {
            world.kill()
            await mock.shutdown()
            throw error
        }
        await mock.shutdown()
    }

    private init(
        database: PostgresClient,
        standby: PostgresClient?,
        mock: MockAPNsServer,
        environment: [String: String],
        port: Int,
        process: HeraldProcess?,
        sessions: [String: String]
    ) {
        self.database = database
        self.standby = standby
        self.mock = mock
        self.environment = environment
        self.port = port
        self.process = Mutex(process)
        self.sessions = sessions
    }

    static func start(environment: [String: String], port: Int) async throws -> (HeraldProcess, Int) {
        let process = try HeraldProcess(
            arguments: ["serve", "--port", String(port), "--sql-dir", TestPostgres.repositoryRoot() + "/sql"],
            environment: environment
        )
        let line = try await process.waitForLine(containing: "Herald listening on")
        return (process, try #require(line.split(separator: ":").last.flatMap { Int($0) }))
    }

    /// Kills the server (SIGKILL: no goodbye to its streams).
    func kill() {
        process.withLock { process in
            process?.signal(SIGKILL)
            process = nil
        }
    }

    /// Starts the server again on the same port.
    func restart() async throws {
        kill()
        // The port may take a moment to be free again after the kill.
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                let (process, _) = try await Self.start(environment: environment, port: port)
                self.process.withLock { $0 = process }
                return
            } catch  where ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    // MARK: - Admin

    func seed(users: [String]) async throws -> [String: String] {
        try await admin(
            .PUT,
            "/v1/channels/feed",
            #"{"kind":"feed","name":"Feed","categories":[{"id":"news","name":"News","is_default":true},{"id":"promo","name":"Promo"}]}"#
        )
        try await admin(.PUT, "/v1/channels/chat", #"{"kind":"chat","name":"Chat"}"#)
        try await admin(
            .PUT,
            "/v1/templates/plain",
            #"{"name":"Plain","variables":[{"name":"title","type":"string","required":true}],"data":{"title":"{{title}}"},"push_title":"{{title}}","push_body":"{{title}}","actions":[{"id":"ack","label":"Got it"},{"id":"open","label":"Open","url":"https://example.com/open"}]}"#
        )
        let credentials = TestCredentials.shared
        let upload: [String: String] = [
            "type": "token", "environment": "sandbox", "topic": Self.topic, "key": credentials.signingKeyPEM,
            "key_id": credentials.keyID, "team_id": credentials.teamID,
        ]
        try await admin(.PUT, "/v1/apns/credentials/main", String(decoding: try JSONEncoder().encode(upload), as: UTF8.self))
        var sessions: [String: String] = [:]
        for user in users {
            sessions[user] = try await newSession(for: user)
        }
        return sessions
    }

    func newSession(for user: String) async throws -> String {
        try await admin(.PUT, "/v1/users/\(user)", #"{"nickname":"\#(user)"}"#)
        let session = try await admin(.POST, "/v1/users/\(user)/sessions", "{}")
        return try #require(session["token"] as? String)
    }

    /// Sends `title` in `channel` to `users`; the notification's id.
    @discardableResult
    func send(_ title: String, to users: [String], channel: String = "feed", category: String? = nil, alert: Bool = false) async throws -> String {
        var body: [String: Any] = ["channel_url": channel, "template_key": "plain", "variables": ["title": title], "targets": users]
        if let category { body["category"] = category }
        if alert { body["push"] = ["alert": true] }
        let sent = try await admin(.POST, "/v1/notifications", String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self))
        return try #require(sent["id"] as? String)
    }

    @discardableResult
    func admin(_ method: HTTPMethod, _ path: String, _ body: String? = nil, expect: ClosedRange<Int> = 200...299) async throws -> [String: Any] {
        try await call(method, path, body, bearer: Self.adminToken, expect: expect)
    }

    /// A request as any HTTP client would make it; the JSON object answered (empty for none).
    @discardableResult
    func call(
        _ method: HTTPMethod,
        _ path: String,
        _ body: String? = nil,
        bearer: String?,
        expect: ClosedRange<Int> = 200...299
    ) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 24)
        let text = String(buffer: bytes)
        #expect(expect.contains(Int(response.status.code)), "\(method) \(path): \(response.status) \(text)")
        guard !text.isEmpty else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
    }

    /// A client with `user` signed in, without a cache unless given a directory for them; `configure`
    /// changes anything else.
    @MainActor
    func client(
        _ user: String,
        cache: URL? = nil,
        configure: (inout HeraldClient.Configuration) -> Void = { _ in },
        tokenProvider: (@Sendable () async throws -> String)? = nil
    ) async throws -> HeraldClient {
        await HeraldClient(
            configuration: configuration(cache: cache, tokenProvider: tokenProvider, configure: configure),
            userID: user,
            sessionToken: try #require(sessions[user])
        )
    }

    /// The configuration test clients use: this server, quick reconnections.
    func configuration(
        cache: URL? = nil,
        tokenProvider: (@Sendable () async throws -> String)? = nil,
        configure: (inout HeraldClient.Configuration) -> Void = { _ in }
    ) -> HeraldClient.Configuration {
        var configuration = HeraldClient.Configuration(serverURL: serverURL, tokenProvider: tokenProvider, cacheDirectory: cache)
        configuration.initialReconnectDelay = .milliseconds(50)
        configuration.maximumReconnectDelay = .milliseconds(500)
        configure(&configuration)
        return configuration
    }
}

/// A fresh directory for client caches, removed by `remove()`.
struct CacheDirectory {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-client-cache-\(UUID().uuidString)")

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// Waits until `condition` holds, failing after a deadline (never a fixed sleep standing in for it).
@MainActor
func eventually(_ what: String, timeout: Duration = .seconds(30), _ condition: @MainActor () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw HeraldProcessError(message: "timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// A transaction holding an id on a database until `end()`: until then every sync's answer stops
/// below it, as on a busy cluster.
final class HeldTransaction: Sendable {
    private let release: AsyncStream<Void>.Continuation
    private let task: Task<Void, any Error>

    private init(release: AsyncStream<Void>.Continuation, task: Task<Void, any Error>) {
        self.release = release
        self.task = task
    }

    /// Opens it; returns once it holds its id.
    static func open(on database: PostgresClient) async throws -> HeldTransaction {
        let (opened, openedSignal) = AsyncStream<Void>.makeStream()
        let (released, release) = AsyncStream<Void>.makeStream()
        let task = Task {
            defer { openedSignal.finish() }
            try await database.withTransaction { connection in
                try await connection.query("SELECT pg_current_xact_id()")
                openedSignal.yield()
                for await _ in released { break }
            }
        }
        var held = false
        for await _ in opened {
            held = true
            break
        }
        guard held else {
            try await task.value
            throw HeraldProcessError(message: "the transaction ended before it held an id")
        }
        return HeldTransaction(release: release, task: task)
    }

    /// Commits it (once; later calls wait for the same end).
    func end() async throws {
        release.finish()
        try await task.value
    }
}
