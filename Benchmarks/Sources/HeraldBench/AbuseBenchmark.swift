import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldServer
import HeraldStore
import Logging
import NIOCore
import Postgres
import Synchronization

/// The `abuse` case: ordinary users poll at a steady rate while one session polls as fast as `wrk`
/// can send — with Herald's rate limits and without them — and the ordinary users' latency is
/// compared with what it was when nobody abused the server.
struct AbuseBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "abuse",
        abstract: "Other users' poll latency while one session floods the server, with and without rate limits."
    )

    @Option(help: "Users that poll at a steady rate (each with a session).")
    var pollers: Int = 500

    @Option(help: "Their polls per second, all together.")
    var rate: Double = 200

    @Option(help: "Connections the abusive session floods with.")
    var connections: Int = 16

    @Option(help: "Seconds per measurement.")
    var seconds: Int = 10

    @Option(help: "PostgreSQL URI or conninfo; default: a private cluster in a temporary directory.")
    var databaseURL: String?

    func run() async throws {
        guard Wrk.path() != nil else { throw ValidationError("wrk not found: apt-get install wrk") }
        // The sync benchmark's data and polls: users with 200 notifications each, quiet incremental polls.
        let sync = try SyncBenchmark.parse(["--users", "\(pollers + 1)", "--pollers", "\(pollers + 1)", "--seconds", "\(seconds)"])
        let database = try await BenchDatabase.open(databaseURL: databaseURL)
        defer { database.close() }
        var http = HTTPClient.Configuration()
        http.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
        try await database.withFreshHeraldDatabase("herald_abuse_bench", connections: 8, http: http) { client, http, _, logger in
            let positions = try await sync.seed(client)
            let key = try await SettingsStore(client: client).syncTokenKey()
            func request(_ user: Int) -> (token: String, session: String) {
                SyncBenchmark.pollRequest(user: user, position: positions.quiet, key: key)
            }
            // User 1 abuses; the others poll at the steady rate, four tasks sharing it.
            let abuser = request(1)
            let others = (2...pollers + 1).map(request)
            // Every client comes from 127.0.0.1 here, so the per-address limit would hold everyone back
            // alike; it is off, and the session limit (the default) is what is measured.
            var limited = RequestLimits.Settings()
            limited.address = nil
            print("Polls of \(pollers) users at \(format(rate)) req/s together (4 tasks, AsyncHTTPClient), \(seconds) s each;")
            print("one session flooding with wrk over \(connections) connections meanwhile. Session limit: \(limited.session?.description ?? "off").")
            print("")
            print("| limits | flood | others: achieved req/s | p50 / p99 ms | p99 ÷ quiet p99 | flood: answered req/s | of them 429 |")
            print("|---|---|---:|---:|---:|---:|---:|")
            // The first quiet measurement (limits on) is the reference for both servers.
            let reference = Mutex<Double?>(nil)
            for (name, settings) in [("on", limited), ("off", RequestLimits.Settings.off)] {
                try await BenchServer.run(client: client, adminToken: SyncBenchmark.adminToken, limits: settings, logger: logger) { port in
                    try await sync.check(http: http, port: port, request: others[0], expected: 0)
                    let quiet = try await sync.load(http: http, port: port, requests: others, clients: 4, seconds: seconds, pace: rate / 4)
                    let quietP99 = reference.withLock { stored in
                        if stored == nil { stored = quiet.p99 }
                        return stored
                    }
                    print(row(name, "none", quiet, quietP99, flood: nil))
                    let flood = Task {
                        try await Wrk.run(
                            port: port,
                            requests: [(path: SyncBenchmark.path(abuser.token), session: abuser.session)],
                            clients: connections,
                            seconds: seconds + 2,
                            acceptRefusals: true
                        )
                    }
                    // The flood is under way before the measurement starts, and outlasts it.
                    try await Task.sleep(for: .seconds(1))
                    let abused = try await sync.load(http: http, port: port, requests: others, clients: 4, seconds: seconds, pace: rate / 4)
                    let result = try await flood.value
                    print(row(name, "one session", abused, quietP99, flood: result))
                }
            }
        }
    }

    private func row(_ limits: String, _ flood: String, _ sample: SyncBenchmark.Sample, _ quiet: Double?, flood result: Wrk.Result?) -> String {
        let ratio = quiet.map { format(sample.p99 / $0, digits: 2) + "×" } ?? "–"
        let answered = result.map { format($0.rate) } ?? "–"
        let refused = result.map { r in "\(format(Double(r.refused) / (r.rate * Double(seconds + 2)) * 100)) %" } ?? "–"
        return
            "| \(limits) | \(flood) | \(format(sample.rate)) | \(format(sample.p50, digits: 2)) / \(format(sample.p99, digits: 2)) | \(ratio) | \(answered) | \(refused) |"
    }
}
