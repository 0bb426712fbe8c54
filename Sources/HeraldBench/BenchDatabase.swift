import Foundation
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
