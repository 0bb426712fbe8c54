import ArgumentParser
import AsyncHTTPClient
import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import HummingbirdWSClient
import Logging
import NIOCore
import NIOHTTP1
import Postgres
import Synchronization

/// The `sockets` case: many idle authenticated live streams held by one `herald serve` process — its
/// resident memory with them open — and the time one notification to all their users takes to reach
/// every socket.
struct SocketsBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sockets",
        abstract: "Idle WebSockets on one herald process: RSS, and one notification's time to reach them all."
    )

    @Option(help: "WebSockets to open.")
    var sockets: Int = 10_000

    @Option(help: "Users they belong to (sockets are spread evenly); the notification goes to all of them.")
    var users: Int = 1_000

    @Option(help: "Connections being opened at once.")
    var parallel: Int = 100

    @Option(help: "PostgreSQL URI or conninfo; default: a private cluster in a temporary directory.")
    var databaseURL: String?

    @Option(help: "A command to run herald under, e.g. 'heaptrack -o /tmp/herald' (RSS is then the launcher's tree's root).")
    var launcher: String?

    @Option(name: .customLong("server-env"), help: "NAME=VALUE for the herald process (repeatable), e.g. MALLOC_ARENA_MAX=2.")
    var serverEnvironment: [String] = []

    static let adminToken = "herald-bench-admin-token-0123456789"

    func run() async throws {
        guard sockets > 0, users > 0, users <= sockets else { throw ValidationError("need 0 < --users <= --sockets") }
        let database = try await BenchDatabase.open(databaseURL: databaseURL)
        defer { database.close() }
        try await database.withFreshHeraldDatabase("herald_sockets_bench", connections: 4) { client, http, conninfo, _ in
            try await BenchSeed.feedAndPlainTemplate(client)
            let sessions = try await BenchSeed.usersWithSessions(client, count: users)

            let serve = try await ServeProcess.start(
                conninfo: conninfo,
                adminToken: Self.adminToken,
                environment: ServeProcess.environment(serverEnvironment),
                launcher: launcher.map { $0.split(separator: " ").map(String.init) } ?? []
            )
            let (server, port) = (serve.process, serve.port)
            defer { server.signal(SIGKILL) }
            let idleRSS = ServeProcess.residentMegabytes(server.pid)

            let clock = ContinuousClock()
            let tally = Tally()
            let openStart = clock.now
            let connections = Task {
                await withTaskGroup(of: Void.self) { group in
                    for index in 0..<sockets {
                        if index >= parallel { await tally.waitForReady(index - parallel + 1) }
                        let session = sessions[index % users]
                        group.addTask { await Self.hold(port: port, session: session, tally: tally, clock: clock) }
                    }
                }
            }
            await tally.waitForReady(sockets)
            let opened = clock.now - openStart
            let openRSS = ServeProcess.residentMegabytes(server.pid)
            // Idle for a while: pings, heartbeats, nothing else.
            try await Task.sleep(for: .seconds(5))
            let settledRSS = ServeProcess.residentMegabytes(server.pid)
            // What the sockets and the server said, so that a failure in CI can be read from its log.
            try ensure(
                tally.failures == 0,
                "\(tally.failures) connections failed, the first with \(tally.firstFailure ?? "?"); the server's last lines: "
                    + server.printed.suffix(10).joined(separator: " | ")
            )

            // One notification to every user.
            let targets = (1...users).map { "\"bench-\($0)\"" }.joined(separator: ",")
            let sent = clock.now
            tally.start(at: sent)
            try await Self.post(
                http,
                port: port,
                path: "/v1/notifications",
                body: #"{"channel_url":"feed","template_key":"plain","variables":{"title":"hello"},"targets":[\#(targets)]}"#
            )
            let accepted = clock.now - sent
            await tally.waitForReceived(sockets)
            let arrivals = tally.arrivals.sorted()
            let deliveredRSS = ServeProcess.residentMegabytes(server.pid)

            server.signal(SIGTERM)
            _ = try? await server.waitForExit(timeout: .seconds(60))
            connections.cancel()

            print(
                """
                | sockets | users | opened in | herald RSS: before | open | after 5 s idle | after the event | send accepted | first socket | median | last socket |
                | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
                | \(sockets) | \(users) | \(format(elapsedSeconds(opened), digits: 1)) s | \(idleRSS) MB | \(openRSS) MB | \(settledRSS) MB | \(deliveredRSS) MB | \
                \(format(elapsedSeconds(accepted) * 1000, digits: 1)) ms | \(format(elapsedSeconds(arrivals.first!) * 1000, digits: 1)) ms | \
                \(format(elapsedSeconds(arrivals[arrivals.count / 2]) * 1000, digits: 1)) ms | \(format(elapsedSeconds(arrivals.last!) * 1000, digits: 1)) ms |
                """
            )
        }
    }

    /// One socket for the whole run: counts itself ready, records when the notification arrives.
    private static func hold(port: Int, session: String, tally: Tally, clock: ContinuousClock) async {
        var headers = HTTPFields()
        headers[.authorization] = "Bearer \(session)"
        var logger = Logger(label: "bench.socket")
        logger.logLevel = .critical
        do {
            try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(port)/v1/me/stream",
                configuration: .init(additionalHeaders: headers),
                logger: logger
            ) { inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    guard case .text(let text) = message else { continue }
                    if text.contains(#""type":"ready""#) {
                        tally.ready()
                    } else if text.contains(#""type":"notification.created""#) {
                        tally.received(at: clock.now)
                    }
                }
            }
        } catch {
            tally.failed(error)
        }
    }

    private static func post(_ http: HTTPClient, port: Int, path: String, body: String) async throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(adminToken)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.execute(request, timeout: .seconds(60))
        guard response.status == .created else { throw ValidationError("the send failed: \(response.status)") }
    }

    private func ensure(_ condition: Bool, _ message: String) throws {
        if !condition { throw ValidationError(message) }
    }
}

/// Counts shared by every socket task.
private final class Tally: Sendable {
    private struct State {
        var ready = 0
        var received = 0
        var failures = 0
        /// What the first socket that failed failed with.
        var firstFailure: String?
        var sentAt: ContinuousClock.Instant?
        var arrivals: [Duration] = []
    }

    private let state = Mutex(State())

    func ready() { state.withLock { $0.ready += 1 } }
    func failed(_ error: any Error) {
        state.withLock { state in
            state.failures += 1
            if state.firstFailure == nil { state.firstFailure = String(describing: error) }
        }
    }

    var firstFailure: String? { state.withLock { $0.firstFailure } }
    func start(at instant: ContinuousClock.Instant) { state.withLock { $0.sentAt = instant } }

    func received(at instant: ContinuousClock.Instant) {
        state.withLock { state in
            state.received += 1
            if let sent = state.sentAt { state.arrivals.append(instant - sent) }
        }
    }

    var failures: Int { state.withLock { $0.failures } }
    var arrivals: [Duration] { state.withLock { $0.arrivals } }

    /// Polls (this is a benchmark driver, not a test): until `count` sockets are ready or failed.
    func waitForReady(_ count: Int) async {
        while state.withLock({ $0.ready + $0.failures }) < count {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    func waitForReceived(_ count: Int) async {
        while state.withLock({ $0.received + $0.failures }) < count {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }
}
