import ArgumentParser

/// `herald-bench`: Herald's benchmarks. Each case prints a Markdown table for `docs/benchmarks.md`.
@main
struct HeraldBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-bench",
        abstract: "Measure Herald against reference tools on this machine.",
        subcommands: [
            PGBenchmark.self, FanoutBenchmark.self, SyncBenchmark.self, AbuseBenchmark.self, PushBenchmark.self, SocketsBenchmark.self,
            LongPollBenchmark.self,
            ClientBenchmark.self, RetentionBenchmark.self, WebhookBenchmark.self, ExportBenchmark.self, SoakBenchmark.self,
            CurvesBenchmark.self, ScheduleBenchmark.self,
        ]
    )
}
