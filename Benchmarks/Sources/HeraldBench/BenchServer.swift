import ArgumentParser
import ChildProcess
import Foundation
import HeraldServer
import HeraldServices
import Logging
import Postgres
import Prometheus
import ServiceLifecycle

/// Herald's HTTP application and fan-out service (and any `services` given), in-process on a loopback
/// port, for one benchmark.
enum BenchServer {
    static func run(
        client: PostgresClient,
        adminToken: String,
        fanoutBatchSize: Int = 10_000,
        sync: SyncSettings = SyncSettings(),
        limits: RequestLimits.Settings = .off,
        services: [any Service] = [],
        logger: Logger,
        _ body: @escaping @Sendable (Int) async throws -> Void
    ) async throws {
        let wake = WakeSignal()
        let dependencies = HeraldApplication.Dependencies(
            client: client,
            migrator: try HeraldRuntime.migrator(client: client, logger: logger),
            metricsRegistry: PrometheusCollectorRegistry(),
            adminToken: adminToken,
            fanoutWake: wake,
            sync: sync,
            limits: RequestLimits(limits)
        )
        let (portStream, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let application = HeraldApplication.build(dependencies, host: "127.0.0.1", port: 0, logger: logger) { port in
            portContinuation.yield(port)
        }
        let fanout = FanoutService(client: client, batchSize: fanoutBatchSize, wake: wake, logger: logger)
        let group = ServiceGroup(services: [fanout] + services + [application], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var ports = portStream.makeAsyncIterator()
            guard let port = await ports.next() else { throw ValidationError("the server did not start") }
            do {
                try await body(port)
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}

/// Runs `pgbench` with a custom script.
enum PGBench {
    struct Result {
        var tps: Double
        /// Average latency in milliseconds, as pgbench reports it.
        var latencyAverage: Double?
    }

    /// `pgbench -n -M <mode> -f <script>` with `clients` clients and threads; `prefix` goes before the
    /// command line (`taskset -c 1`).
    static func run(
        conninfo: String,
        script: String,
        clients: Int,
        seconds: Int,
        mode: String = "prepared",
        extra: [String] = [],
        prefix: [String] = []
    ) throws -> Result {
        let outputPath = NSTemporaryDirectory() + "herald-bench-pgbench-\(getpid()).out"
        try? FileManager.default.removeItem(atPath: outputPath)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let arguments =
            prefix + [try path(), "-n", "-M", mode, "-f", script, "-c", "\(clients)", "-j", "\(clients)", "-T", "\(seconds)"] + extra + [conninfo]
        let status = try ChildProcess.run(arguments, environment: ["PATH=/usr/bin:/bin", "LC_ALL=C"], outputPath: outputPath)
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        func value(after prefix: String) -> Double? {
            text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }).flatMap {
                Double($0.dropFirst(prefix.count).split(separator: " ").first ?? "")
            }
        }
        guard status == 0, let tps = value(after: "tps = ") else {
            throw ValidationError("pgbench failed:\n\(text)")
        }
        return Result(tps: tps, latencyAverage: value(after: "latency average = "))
    }

    static func path() throws -> String {
        for candidate in ["/usr/bin/pgbench", "/usr/local/bin/pgbench"]
            + ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).map({ "/usr/lib/postgresql/\($0)/bin/pgbench" })
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw ValidationError("pgbench not found: apt-get install postgresql-contrib (or postgresql)")
    }
}
