import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import NIOCore
import NIOHTTP1
import Postgres
import Synchronization

/// The `longpoll` case: one quiet long poll (`?wait=50`) per user waiting on one `herald serve`
/// process — its resident memory with them all waiting — then notifications sent one at a time, each
/// to one waiting user, and the time from each send until that user's poll answers with it.
struct LongPollBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "longpoll",
        abstract: "Waiting long polls on one herald process: RSS, and how soon a send wakes its target's poll."
    )

    @Option(help: "Users, each with one long poll waiting.")
    var users: Int = 10_000

    @Option(help: "Notifications sent, one at a time, each to a different waiting user.")
    var sends: Int = 200

    @Option(help: "Sends per second.")
    var rate: Int = 20

    @Option(help: "Requests being started at once while the polls are set up.")
    var parallel: Int = 200

    @Option(help: "PostgreSQL URI or conninfo; default: a private cluster in a temporary directory.")
    var databaseURL: String?

    @Option(name: .customLong("server-env"), help: "NAME=VALUE for the herald process (repeatable), e.g. MALLOC_ARENA_MAX=2.")
    var serverEnvironment: [String] = []

    static let adminToken = "herald-bench-admin-token-0123456789"

    func run() async throws {
        guard users > 0, sends > 0, sends <= users, rate > 0 else { throw ValidationError("need 0 < --sends <= --users and --rate > 0") }
        let database = try await BenchDatabase.open(databaseURL: databaseURL)
        defer { database.close() }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(120), concurrentHTTP1ConnectionsPerHostSoftLimit: parallel)
        // The long polls on a client of their own: one connection each, and nothing else queued
        // behind them (the metrics reads and the sends go through the other).
        var pollConfiguration = HTTPClient.Configuration()
        pollConfiguration.connectionPool = .init(idleTimeout: .seconds(120), concurrentHTTP1ConnectionsPerHostSoftLimit: users + 16)
        let pollClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: pollConfiguration)
        do {
            try await measure(database, configuration: configuration, pollClient: pollClient)
        } catch {
            try? await pollClient.shutdown()
            throw error
        }
        try await pollClient.shutdown()
    }

    private func measure(_ database: BenchDatabase, configuration: HTTPClient.Configuration, pollClient: HTTPClient) async throws {
        try await database.withFreshHeraldDatabase("herald_longpoll_bench", connections: 4, http: configuration) { client, http, conninfo, _ in
            try await BenchSeed.feedAndPlainTemplate(client)
            let sessions = try await BenchSeed.usersWithSessions(client, count: users)
            let serve = try await ServeProcess.start(
                conninfo: conninfo,
                adminToken: Self.adminToken,
                environment: [
                    "HERALD_RATE_LIMIT_SESSION": "off", "HERALD_RATE_LIMIT_ADDRESS": "off", "HERALD_LONG_POLL_MAX": String(users + 100),
                ].merging(ServeProcess.environment(serverEnvironment)) { $1 }
            )
            let (server, port) = (serve.process, serve.port)
            defer { server.signal(SIGKILL) }
            let idleRSS = ServeProcess.residentMegabytes(server.pid)

            // Every user's token, from a first load.
            let tokens = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                var tokens = [String](repeating: "", count: users)
                for index in 0..<users {
                    if index >= parallel, let (done, token) = try await group.next() { tokens[done] = token }
                    group.addTask {
                        let body = try await Self.get(http, port: port, path: "/v1/me/channels/feed/collection?limit=1", session: sessions[index])
                        guard let token = body["next_token"] as? String else { throw ValidationError("no token for user \(index + 1)") }
                        return (index, token)
                    }
                }
                for try await (done, token) in group { tokens[done] = token }
                return tokens
            }

            let loadedRSS = ServeProcess.residentMegabytes(server.pid)
            let clock = ContinuousClock()
            let tally = LongPollTally(users: users)
            let polls = Task {
                await withTaskGroup(of: Void.self) { group in
                    for index in 0..<users {
                        let token = tokens[index]
                        group.addTask {
                            let path = "/v1/me/channels/feed/collection?wait=50&token=" + Self.escaped(token)
                            do {
                                let body = try await Self.get(pollClient, port: port, path: path, session: sessions[index])
                                tally.answered(index, changes: (body["notifications"] as? [Any])?.count ?? 0, at: clock.now)
                            } catch {
                                tally.failed()
                            }
                        }
                        // A batch at a time, each once the server holds the ones before it.
                        if (index + 1) % parallel == 0 || index + 1 == users {
                            while (try? await Self.waiting(http, port: port)) ?? 0 < index + 1 - tally.failures, tally.failures == 0 {
                                try? await Task.sleep(for: .milliseconds(20))
                            }
                        }
                    }
                }
            }
            // Until every poll waits on the server.
            let setUp = clock.now
            while try await Self.waiting(http, port: port) < users {
                guard tally.failures == 0 else { throw ValidationError("\(tally.failures) long polls failed") }
                guard clock.now - setUp < .seconds(300) else {
                    throw ValidationError("the long polls did not all start waiting")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            let waitingRSS = ServeProcess.residentMegabytes(server.pid)

            // One send at a time, each to a user whose poll waits.
            let targets = Array((0..<users).shuffled().prefix(sends))
            for target in targets {
                let started = clock.now
                tally.sent(target, at: started)
                try await Self.send(http, port: port, to: "bench-\(target + 1)")
                try await Task.sleep(until: started + .seconds(1) / rate, clock: clock)
            }
            let deadline = clock.now + .seconds(30)
            while tally.answeredTargets < sends, clock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            let latencies = tally.latencies.sorted()
            let early = tally.earlyAnswers
            server.signal(SIGTERM)
            _ = try? await server.waitForExit(timeout: .seconds(60))
            polls.cancel()
            guard latencies.count == sends, early == 0 else {
                throw ValidationError("\(latencies.count) of \(sends) sends woke their poll; \(early) polls answered without a change")
            }
            func milliseconds(_ duration: Duration) -> String { format(elapsedSeconds(duration) * 1000, digits: 1) }
            print(
                """
                | long polls waiting | herald RSS: before | after every user's first load | waiting | sends | send to answer: p50 | p90 | p99 | max |
                | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
                | \(users) | \(idleRSS) MB | \(loadedRSS) MB | \(waitingRSS) MB | \(sends) | \(milliseconds(latencies[sends / 2])) ms | \
                \(milliseconds(latencies[sends * 9 / 10])) ms | \(milliseconds(latencies[min(sends - 1, sends * 99 / 100)])) ms | \
                \(milliseconds(latencies[sends - 1])) ms |
                """
            )
        }
    }

    static func escaped(_ token: String) -> String {
        token.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_"))) ?? token
    }

    private static func get(_ http: HTTPClient, port: Int, path: String, session: String) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.headers.add(name: "Authorization", value: "Bearer \(session)")
        let response = try await http.execute(request, timeout: .seconds(120))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok, let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] else {
            throw ValidationError("GET \(path.prefix(60)) answered \(response.status)")
        }
        return object
    }

    /// The long polls waiting on the server, from its metrics.
    private static func waiting(_ http: HTTPClient, port: Int) async throws -> Int {
        let response = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(10))
        let text = String(buffer: try await response.body.collect(upTo: 16 << 20))
        let line = text.split(separator: "\n").first { $0.hasPrefix("herald_long_polls_waiting ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? 0
    }

    private static func send(_ http: HTTPClient, port: Int, to user: String) async throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/notifications")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(adminToken)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(
            ByteBuffer(string: #"{"channel_url":"feed","template_key":"plain","variables":{"title":"hello"},"targets":["\#(user)"]}"#)
        )
        let response = try await http.execute(request, timeout: .seconds(30))
        guard response.status == .created else { throw ValidationError("the send failed: \(response.status)") }
    }
}

/// What the polls saw, shared by their tasks.
private final class LongPollTally: Sendable {
    private struct State {
        var sentAt: [Int: ContinuousClock.Instant] = [:]
        var latencies: [Duration] = []
        var early = 0
        var failures = 0
    }

    private let state = Mutex(State())

    init(users: Int) {}

    func sent(_ user: Int, at instant: ContinuousClock.Instant) {
        state.withLock { $0.sentAt[user] = instant }
    }

    func answered(_ user: Int, changes: Int, at instant: ContinuousClock.Instant) {
        state.withLock { state in
            guard let sent = state.sentAt[user], changes > 0 else {
                state.early += 1
                return
            }
            state.latencies.append(instant - sent)
        }
    }

    func failed() { state.withLock { $0.failures += 1 } }

    var failures: Int { state.withLock { $0.failures } }
    var latencies: [Duration] { state.withLock { $0.latencies } }
    var answeredTargets: Int { state.withLock { $0.latencies.count } }
    var earlyAnswers: Int { state.withLock { $0.early } }
}
