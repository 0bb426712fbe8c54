import AsyncHTTPClient
import Foundation
import HeraldServer
import HeraldStore
import Logging
import Postgres

/// The database a benchmark runs against: `--database-url` / `DATABASE_URL`, else a private cluster in
/// a temporary directory that `close()` stops and removes.
struct BenchDatabase {
    let conninfo: String
    private let cluster: PostgresCluster?

    static func open(databaseURL: String?) async throws -> BenchDatabase {
        if let url = databaseURL ?? ProcessInfo.processInfo.environment["DATABASE_URL"] {
            return BenchDatabase(conninfo: url, cluster: nil)
        }
        let cluster = try PostgresCluster(directory: NSTemporaryDirectory() + "herald-bench-\(getpid())")
        try await cluster.start()
        return BenchDatabase(conninfo: cluster.conninfo(database: "postgres"), cluster: cluster)
    }

    /// Runs `body` against a fresh database `name` on this server with Herald's migrations applied,
    /// through a pool of `connections` and an HTTP client; both are shut down afterwards.
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
                conninfo: fresh,
                maximumConnections: connections,
                applicationName: "herald-bench",
                pipelineConnections: pipelineConnections
            ),
            logger: logger
        )
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            try await HeraldRuntime.migrator(client: client, logger: logger).migrate()
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
