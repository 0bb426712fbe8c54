import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldServer
import HeraldStore
import HeraldTesting
import Logging
import Postgres

/// The database a benchmark runs against: `--database-url` / `DATABASE_URL`, else a private cluster in
/// a temporary directory that `close()` stops and removes, optionally behind PgBouncer.
struct BenchDatabase {
    let conninfo: String
    private let cluster: PostgresCluster?
    /// In front of the private cluster, for Herald's pool (`--pgbouncer`).
    private var bouncer: PgBouncer?
    /// Whether Herald's pool prepares named statements (`--unprepared`, or a PgBouncer that cannot
    /// keep them, turns this off).
    private(set) var preparedStatements = true

    /// `settings`: more lines for the private cluster's configuration (ignored with a URL).
    static func open(
        databaseURL: String?,
        pgbouncer: Bool = false,
        unprepared: Bool = false,
        settings: [String] = []
    ) async throws -> BenchDatabase {
        if let url = databaseURL ?? ProcessInfo.processInfo.environment["DATABASE_URL"] {
            guard !pgbouncer else { throw ValidationError("--pgbouncer starts its own PgBouncer before the private cluster: drop --database-url") }
            return BenchDatabase(conninfo: url, cluster: nil, preparedStatements: !unprepared)
        }
        var cluster = try PostgresCluster(directory: NSTemporaryDirectory() + "herald-bench-\(getpid())")
        cluster.extraSettings = settings
        try await cluster.start()
        var database = BenchDatabase(conninfo: cluster.conninfo(database: "postgres"), cluster: cluster, preparedStatements: !unprepared)
        if pgbouncer {
            let bouncer = try await PgBouncer.start(in: cluster.directory + "/pgbouncer", before: cluster)
            database.bouncer = bouncer
            database.preparedStatements = database.preparedStatements && bouncer.keepsPreparedStatements
            print("Herald's pool goes through PgBouncer (transaction mode), statements \(database.preparedStatements ? "prepared" : "unnamed").")
        }
        return database
    }

    /// Runs `body` against a fresh database `name` on this server with Herald's migrations applied,
    /// through a pool of `connections` (through PgBouncer with `--pgbouncer`) and an HTTP client; both
    /// are shut down afterwards. `body`'s conninfo reaches the server directly (pgbench's).
    func withFreshHeraldDatabase(
        _ name: String,
        connections: Int,
        pipelineConnections: Int? = nil,
        http configuration: HTTPClient.Configuration = HTTPClient.Configuration(),
        _ body: (_ client: PostgresClient, _ http: HTTPClient, _ conninfo: String, _ logger: Logger) async throws -> Void
    ) async throws {
        let admin = PostgresClient(configuration: .init(conninfo: conninfo, maximumConnections: 1))
        try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name)"))
        try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        await admin.shutdown()
        let fresh = try PostgresConninfo.settingDatabase(name, in: conninfo)
        // The handler `herald serve` uses, so that the server in the bench logs (and pays) the same.
        let level = ProcessInfo.processInfo.environment["BENCH_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        let logger = Logger(label: "herald-bench") { DeferredMetadataLogHandler.standardError(label: $0, level: level) }
        let client = PostgresClient(
            configuration: .init(
                conninfo: bouncer?.conninfo(database: name) ?? fresh,
                maximumConnections: connections,
                applicationName: "herald-bench",
                pipelineConnections: pipelineConnections,
                preparedStatements: preparedStatements
            ),
            logger: logger
        )
        // Migrations hold a session's lock: on the server itself, as `herald serve` runs them.
        let direct = PostgresClient(configuration: .init(conninfo: fresh, maximumConnections: 1, metricsPrefix: "herald_bench_direct_db"))
        do {
            try await HeraldRuntime.migrator(client: direct, logger: logger).migrate()
            await direct.shutdown()
        } catch {
            await direct.shutdown()
            await client.shutdown()
            throw error
        }
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            try await body(client, http, fresh, logger)
        } catch {
            try? await http.shutdown()
            await client.shutdown()
            throw error
        }
        try await http.shutdown()
        await client.shutdown()
    }

    func close() {
        bouncer?.stop()
        guard let cluster else { return }
        try? cluster.stopBlocking()
        try? FileManager.default.removeItem(atPath: cluster.directory)
    }
}

/// Seconds in a `Duration`, as a `Double`.
func elapsedSeconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func format(_ value: Double, digits: Int = 0) -> String {
    String(format: "%.\(digits)f", value)
}
