import APNs
import ArgumentParser
import Foundation
import HeraldServer
import Logging
import Metrics
import Prometheus

/// `herald`: the notification-channel service and its administration commands.
@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Notification channels with incremental sync, live streams and pushes (APNs, FCM, Web Push).",
        subcommands: [Serve.self, Migrate.self, Fixtures.self, Push.self, Compact.self],
        defaultSubcommand: Serve.self
    )
}

/// Options shared by every command that reaches the database.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .long, help: "Data directory for the embedded database and generated secrets (HERALD_DATA_DIR, default .herald).")
    var dataDir: String?

    @Option(name: .long, help: "PostgreSQL URI or conninfo (DATABASE_URL). Without it and without PG* variables, an embedded cluster is used.")
    var databaseURL: String?

    @Option(name: .long, help: "Directory of migration files (HERALD_SQL_DIR, default: sql/).")
    var sqlDir: String?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical (HERALD_LOG_LEVEL, default info).")
    var logLevel: String?

    /// The configuration for a command that only needs the database.
    func configuration() throws -> HeraldConfiguration {
        try HeraldConfiguration.resolve(logLevel: logLevel, dataDirectory: dataDir, databaseURL: databaseURL, migrationsDirectory: sqlDir)
    }
}

extension Herald {
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Migrate the database and serve the HTTP API.")

        @OptionGroup var database: DatabaseOptions

        @Option(name: .long, help: "Address to listen on (HERALD_HOST, default 127.0.0.1).")
        var host: String?

        @Option(name: .long, help: "Port to listen on; 0 picks a free one (HERALD_PORT, default 8080).")
        var port: Int?

        @Option(name: .long, help: "Most database connections open at once (HERALD_DB_POOL_SIZE, default 10).")
        var dbPoolSize: Int?

        @Option(name: .long, help: "A hot standby's URI or conninfo for sync reads (HERALD_READ_DATABASE_URL).")
        var readDatabaseURL: String?

        func run() async throws {
            let configuration = try HeraldConfiguration.resolve(
                host: host,
                port: port,
                logLevel: database.logLevel,
                dataDirectory: database.dataDir,
                databaseURL: database.databaseURL,
                readDatabaseURL: readDatabaseURL,
                databasePoolSize: dbPoolSize,
                migrationsDirectory: database.sqlDir
            )
            let logger = bootstrapLogging(configuration)
            let registry = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
            try await HeraldRuntime.serve(configuration, metricsRegistry: registry, logger: logger)
        }
    }

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Apply pending migrations from sql/ and exit.")

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let configuration = try database.configuration()
            let logger = bootstrapLogging(configuration)
            let report = try await HeraldRuntime.migrate(configuration, logger: logger)
            if report.applied.isEmpty {
                print("Database is up to date (\(report.alreadyApplied) migrations applied).")
            } else {
                print("Applied \(report.applied.count) migration(s): \(report.applied.joined(separator: ", ")).")
            }
        }
    }
}

extension Herald {
    struct Compact: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Compact the change history now, as `herald serve` does every ten minutes.",
            discussion: """
                Removes the tombstones of deleted notifications (and the channel list's removed channels) older \
                than the retention; sync tokens from before them are no longer live (their clients load afresh). \
                Each pass also records the current horizon, which a later pass may compact through.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(name: .long, help: "How much history to keep: 30d, 12h, 90m, 3600s, or 0s for none (default HERALD_CHANGE_RETENTION).")
        var retention: String?

        func run() async throws {
            let configuration = try database.configuration()
            let logger = bootstrapLogging(configuration)
            var kept: Duration?
            if let retention {
                guard let duration = HeraldConfiguration.duration(retention) else {
                    throw ValidationError("--retention must be a duration such as 30d, 12h, 90m, 3600s or 0s, got '\(retention)'")
                }
                kept = duration
            }
            if let pass = try await HeraldRuntime.compact(configuration, retention: kept, logger: logger) {
                print(
                    "Compacted through position \(pass.compactedThrough): \(pass.removedTombstones) tombstone(s), \(pass.removedNotifications) notification(s) removed."
                )
            } else {
                print("Nothing is old enough to compact yet.")
            }
        }
    }
}

extension Herald {
    struct Fixtures: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Manage channel and template fixtures.",
            subcommands: [Load.self]
        )

        struct Load: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Validate every fixture file, then apply them all in one transaction."
            )

            @OptionGroup var database: DatabaseOptions

            @Argument(help: "Directory of *.json fixture files.")
            var directory: String = "fixtures"

            func run() async throws {
                let configuration = try database.configuration()
                let logger = bootstrapLogging(configuration)
                let report = try await HeraldRuntime.loadFixtures(configuration, directory: directory, logger: logger)
                for item in report.items {
                    print("\(item.outcome.padding(toLength: 9, withPad: " ", startingAt: 0)) \(item.kind) \(item.id)")
                }
                print(report.isUnchanged ? "Nothing changed (\(report.items.count) items)." : "Loaded \(report.items.count) items.")
            }
        }
    }
}

extension Herald {
    struct Push: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Push tools.",
            subcommands: [Test.self]
        )

        struct Test: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Send a silent refresh push to every device of a user now and print each result."
            )

            @OptionGroup var database: DatabaseOptions

            @Option(name: .long, help: "The user whose devices get the push.")
            var user: String

            func run() async throws {
                let configuration = try database.configuration()
                let logger = bootstrapLogging(configuration)
                let results = try await HeraldRuntime.pushTest(configuration, userID: user, logger: logger)
                if results.isEmpty { print("User \(user) has no devices.") }
                for item in results { print(item.summary) }
                if results.contains(where: { !$0.isDelivered }) { throw ExitCode(1) }
            }
        }
    }
}

/// Structured logs (key=value metadata) on standard error at the configured level.
func bootstrapLogging(_ configuration: HeraldConfiguration) -> Logger {
    let level = configuration.logLevel
    LoggingSystem.bootstrap { label in
        DeferredMetadataLogHandler.standardError(label: label, level: level)
    }
    return Logger(label: "herald")
}
