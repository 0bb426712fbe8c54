import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres

#if canImport(Glibc)
import Glibc
#endif

/// The `schedule` case: many scheduled sends all due at one instant, made by `herald serve`
/// processes; how long after their time each notification was made (its `created_at` minus the
/// time it was due).
struct ScheduleBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule",
        abstract: "Scheduled sends due at one instant: how soon after it each is made."
    )

    @Option(help: "Scheduled sends, all due at the same instant, each to one listed user.")
    var sends = 1000

    @Option(help: "Users the sends go to, in turn.")
    var users = 100

    @Option(help: "Seconds between scheduling and the instant they are due.")
    var lead = 5.0

    @Option(help: "herald serve processes making them.")
    var replicas = 1

    @Option(help: "Runs, each with a fresh set of sends.")
    var runs = 3

    @Option(help: "PostgreSQL URI or conninfo; default: a private cluster in a temporary directory.")
    var databaseURL: String?

    static let adminToken = "herald-bench-admin-token-0123456789"

    func run() async throws {
        guard sends > 0, users > 0, lead >= 1, replicas > 0, runs > 0 else {
            throw ValidationError("every option must be positive, --lead at least 1")
        }
        let database = try await BenchDatabase.open(databaseURL: databaseURL)
        defer { database.close() }
        try await database.withFreshHeraldDatabase("herald_schedule_bench", connections: 4) { client, _, conninfo, _ in
            try await BenchSeed.feedAndPlainTemplate(client)
            try await client.query("INSERT INTO users (id) SELECT 'bench-' || i FROM generate_series(1, \(users)) AS i")
            var servers: [ServeProcess] = []
            defer { for server in servers { server.process.signal(SIGKILL) } }
            for _ in 0..<replicas { servers.append(try await ServeProcess.start(conninfo: conninfo, adminToken: Self.adminToken)) }
            print("")
            print("| run | sends | replicas | first made after | p50 | p90 | p99 | last made after | sends/s |")
            print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for run in 1...runs {
                let due = Date() + lead
                try await schedule(client, run: run, due: due)
                let start = ContinuousClock.now
                while try await client.query("SELECT count(*) FROM scheduled_sends WHERE state = 'scheduled'")[0].decode(Int64.self) > 0 {
                    guard ContinuousClock.now - start < .seconds(lead + 120) else { throw ValidationError("run \(run): not every send was made") }
                    try await Task.sleep(for: .milliseconds(20))
                }
                // Milliseconds after `due` at which each send's notification was made, in order.
                let delays = try await client.query(
                    """
                    SELECT (extract(epoch FROM n.created_at - \(PostgresTimestamp(due))) * 1000)::float8
                    FROM scheduled_sends s JOIN notifications n ON n.id = s.notification_ids[1]
                    WHERE s.request -> 'variables' ->> 'title' LIKE \("run-\(run)-%") ORDER BY 1
                    """
                ).map { try $0.decode(Double.self) }
                guard delays.count == sends else { throw ValidationError("run \(run): \(delays.count) of \(sends) sends made one notification") }
                func at(_ share: Double) -> String { format(delays[min(delays.count - 1, Int(Double(delays.count) * share))]) + " ms" }
                let span = max(0.001, (delays.last! - delays.first!) / 1000)
                print(
                    "| \(run) | \(sends) | \(replicas) | \(format(delays.first!)) ms | \(at(0.5)) | \(at(0.9)) | \(at(0.99)) | "
                        + "\(format(delays.last!)) ms | \(format(Double(sends) / span)) |"
                )
            }
        }
    }

    /// `sends` scheduled sends due at `due`, written in one statement as `POST /v1/scheduled-sends`
    /// stores them.
    private func schedule(_ client: PostgresClient, run: Int, due: Date) async throws {
        try await client.query(
            """
            INSERT INTO scheduled_sends (request, channel_url, template_key, audience, send_at, next_at)
            SELECT jsonb_build_object('channel_url', 'feed', 'template_key', 'plain',
                    'targets', jsonb_build_array('bench-' || (1 + i % \(users))),
                    'variables', jsonb_build_object('title', \("run-\(run)-") || i)),
                'feed', 'plain', 'targets', \(PostgresTimestamp(due)), \(PostgresTimestamp(due))
            FROM generate_series(1, \(sends)) AS i
            """
        )
    }
}
