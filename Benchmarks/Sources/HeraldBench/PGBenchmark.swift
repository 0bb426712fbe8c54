import ArgumentParser
import ChildProcess
import Foundation
import HeraldTesting
import Postgres

/// The `pg` case: the same one-row indexed `SELECT` through Herald's pool and through `pgbench`, at
/// the same client counts, against the same database, in the same run.
struct PGBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pg",
        abstract: "Pool throughput and latency versus pgbench for a one-row indexed SELECT."
    )

    @Option(help: "Seconds per measurement.")
    var seconds: Int = 5

    @Option(help: "Comma-separated client counts.")
    var clients: String = "1,2,4,8"

    @Option(help: "Rows in the benchmark table.")
    var rows: Int = 10_000

    @Option(help: "PostgreSQL URI or conninfo; default: a private cluster in a temporary directory.")
    var databaseURL: String?

    func run() async throws {
        let clientCounts = clients.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !clientCounts.isEmpty, clientCounts.allSatisfy({ $0 > 0 }) else {
            throw ValidationError("--clients must list positive numbers")
        }
        let database = try await BenchDatabase.open(databaseURL: databaseURL)
        defer { database.close() }
        let conninfo = database.conninfo

        try await prepareTable(conninfo: conninfo)
        let script = NSTemporaryDirectory() + "herald-bench-\(getpid()).sql"
        try "\\set id random(1, \(rows))\nSELECT value FROM bench_kv WHERE id = :id;\n".write(toFile: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: script) }

        print("Herald pool A: tasks on Swift's cooperative pool, one hop to the pool's threads per statement.")
        print("Herald pool B: tasks with the pool's executor preference, statements run in place.")
        print("")
        print(
            "| clients | pool A (q/s) | A p50 / p99 ms | pool B (q/s) | B p50 / p99 ms | pgbench simple | pgbench extended | pgbench prepared | B ÷ simple | B ÷ prepared |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for count in clientCounts {
            let hop = try await measurePool(conninfo: conninfo, clients: count, onExecutor: false)
            let inPlace = try await measurePool(conninfo: conninfo, clients: count, onExecutor: true)
            let simple = try runPGBench(conninfo: conninfo, script: script, clients: count, mode: "simple")
            let extended = try runPGBench(conninfo: conninfo, script: script, clients: count, mode: "extended")
            let prepared = try runPGBench(conninfo: conninfo, script: script, clients: count, mode: "prepared")
            print(
                "| \(count) | \(format(hop.rate)) | \(format(hop.p50, digits: 3)) / \(format(hop.p99, digits: 3)) "
                    + "| \(format(inPlace.rate)) | \(format(inPlace.p50, digits: 3)) / \(format(inPlace.p99, digits: 3)) "
                    + "| \(format(simple)) | \(format(extended)) | \(format(prepared)) "
                    + "| \(format(inPlace.rate / simple * 100, digits: 0)) % | \(format(inPlace.rate / prepared * 100, digits: 0)) % |"
            )
        }
    }

    private func prepareTable(conninfo: String) async throws {
        let client = PostgresClient(configuration: .init(conninfo: conninfo, maximumConnections: 1))
        do {
            try await client.query("DROP TABLE IF EXISTS bench_kv")
            try await client.query("CREATE TABLE bench_kv (id int8 PRIMARY KEY, value text NOT NULL)")
            try await client.query("INSERT INTO bench_kv SELECT g, md5(g::text) FROM generate_series(1, \(rows)) g")
            try await client.query("ANALYZE bench_kv")
            await client.shutdown()
        } catch {
            await client.shutdown()
            throw error
        }
    }

    struct PoolResult {
        var rate: Double
        var p50: Double
        var p99: Double
    }

    /// `clients` tasks, each issuing the query in a loop through a pool of `clients` connections, each
    /// statement leasing a connection of its own. `onExecutor` runs the tasks on the pool's executor.
    private func measurePool(conninfo: String, clients: Int, onExecutor: Bool) async throws -> PoolResult {
        let client = PostgresClient(configuration: .init(conninfo: conninfo, maximumConnections: clients, applicationName: "herald-bench"))
        let rows = self.rows
        // Warm up: open every connection before the clock starts, as pgbench does before it reports.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<clients {
                group.addTask {
                    for _ in 0..<50 { try await client.query("SELECT value FROM bench_kv WHERE id = \(Int.random(in: 1...rows))") }
                }
            }
            try await group.waitForAll()
        }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(seconds)
        let start = clock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<clients {
                group.addTask(executorPreference: onExecutor ? client.executor : nil) {
                    // A cheap generator, like pgbench's: the system one costs a syscall per number.
                    var random = SplitMix64(seed: UInt64.random(in: 1...UInt64.max))
                    var samples: [Double] = []
                    samples.reserveCapacity(200_000)
                    while clock.now < deadline {
                        let began = clock.now
                        let result = try await client.query("SELECT value FROM bench_kv WHERE id = \(Int.random(in: 1...rows, using: &random))")
                        precondition(result.count == 1)
                        let elapsed = clock.now - began
                        samples.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
                    }
                    return samples
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }
        }
        let elapsed = clock.now - start
        await client.shutdown()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        return PoolResult(rate: Double(sorted.count) / seconds, p50: percentile(0.5), p99: percentile(0.99))
    }

    private func runPGBench(conninfo: String, script: String, clients: Int, mode: String) throws -> Double {
        try PGBench.run(conninfo: conninfo, script: script, clients: clients, seconds: seconds, mode: mode).tps
    }
}
