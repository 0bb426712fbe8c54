import APNs
import Foundation
import HeraldConsole
import HeraldCore
import HeraldServices
import HeraldStore
import Hummingbird
import Logging
import Postgres
import Prometheus
import ServiceLifecycle
import UnixSignals

/// What the `herald` command runs: `serve` and `migrate`.
public enum HeraldRuntime {
    /// The database Herald talks to: an external server or its embedded cluster.
    struct Database {
        var conninfo: String
        /// The server itself, not a pooler in front of it (`HERALD_DIRECT_DATABASE_URL`): LISTEN
        /// connections and migrations need one session throughout.
        var directConninfo: String
        var cluster: PostgresCluster?
        /// False when the embedded cluster was already running (another Herald process on the same
        /// data directory, or one that was killed): `migrate` must then leave it running.
        var startedCluster = false
        /// True on the embedded default's first start, when the demo fixtures are loaded.
        var createdDatabase = false
    }

    /// Applies pending migrations; returns the names applied now and how many were applied before.
    public static func migrate(_ configuration: HeraldConfiguration, logger: Logger) async throws -> (applied: [String], alreadyApplied: Int) {
        try await withDatabase(configuration, connections: 1, logger: logger) { client in
            let report = try await makeMigrator(configuration, client: client, logger: logger).migrate()
            return (report.applied, report.alreadyApplied)
        }
    }

    /// Migrates, then loads the fixtures in `directory` (see `FixtureLoader`).
    public static func loadFixtures(_ configuration: HeraldConfiguration, directory: String, logger: Logger) async throws -> FixtureLoader.Report {
        try await withDatabase(configuration, connections: 1, logger: logger) { client in
            try await makeMigrator(configuration, client: client, logger: logger).migrate()
            return try await FixtureLoader(client: client).load(directory: directory)
        }
    }

    /// One compaction pass now, as `herald serve` makes every ten minutes (`CollectionStore.compact`):
    /// tombstones older than `retention` (the configured one when `nil`) go, and tokens from before
    /// them are no longer live. `nil` when nothing was old enough yet; a pass also records the
    /// current horizon, which the next pass may compact through.
    public static func compact(
        _ configuration: HeraldConfiguration,
        retention: Duration?,
        logger: Logger
    ) async throws -> (compactedThrough: Int64, removedTombstones: Int, removedNotifications: Int)? {
        try await withDatabase(configuration, connections: 1, logger: logger) { client in
            try await makeMigrator(configuration, client: client, logger: logger).migrate()
            return try await CollectionStore(client: client).compact(retention: retention ?? configuration.changeRetention).map {
                ($0.compactedThrough, $0.removedTombstones, $0.removedNotifications)
            }
        }
    }

    /// Runs `body` with a client of `connections` connections to the configured database (starting the
    /// embedded cluster if that is the default), then closes the client and stops the cluster if this
    /// call started it — whether `body` returned or threw.
    static func withDatabase<Result: Sendable>(
        _ configuration: HeraldConfiguration,
        connections: Int,
        logger: Logger,
        _ body: (PostgresClient) async throws -> Result
    ) async throws -> Result {
        let database = try await openDatabase(configuration, logger: logger)
        // Administration (migrations, fixtures) holds a session-level lock: not through a pooler.
        let client = PostgresClient(configuration: .init(conninfo: database.directConninfo, maximumConnections: connections), logger: logger)
        let result: Result
        do {
            result = try await body(client)
        } catch {
            await client.shutdown()
            if database.startedCluster { try? await database.cluster?.stop() }
            throw error
        }
        await client.shutdown()
        if database.startedCluster { try await database.cluster?.stop() }
        return result
    }

    /// What `herald push test` reports for one device.
    public struct PushTestResult: Sendable {
        public var address: PushAddress
        public var result: PushResult

        public var isDelivered: Bool { result.outcome == .delivered }

        /// One line: the device, the outcome, the service's status and reason.
        public var summary: String {
            let target = [address.service.rawValue, address.token, address.environment, address.topic].filter { !$0.isEmpty }
            let status = result.status.map(String.init) ?? "-"
            return "\(target.joined(separator: " ")): \(result.outcome.rawValue) status=\(status) reason=\(result.reason ?? "")"
        }
    }

    /// Sends a refresh push to every device of `userID` now, outside the outbox, and returns what its
    /// service (or the logging transport, without credentials) answered for each. Changes no push state.
    public static func pushTest(_ configuration: HeraldConfiguration, userID: String, logger: Logger) async throws -> [PushTestResult] {
        try await withDatabase(configuration, connections: 2, logger: logger) { client in
            try await makeMigrator(configuration, client: client, logger: logger).migrate()
            guard let userKey = try await UserStore(client: client).key(userID) else {
                throw ConfigurationError("no user with id '\(userID)'")
            }
            let settings = pushSettings(configuration)
            let box = try resolveSecretKey(configuration, logger: logger)
            let transports = PushDispatcher.transports(client: client, box: box, settings: settings, logger: logger)
            do {
                let channels = try await PushStore(client: client).refreshSummaries(userKeys: [userKey])[userKey] ?? []
                let expiration = Int64(Date().timeIntervalSince1970) + configuration.pushExpiration.components.seconds
                let targets = try await DeviceStore(client: client).targets(userKey: userKey)
                // Each service's credentials loaded once, for the services the user has devices of.
                let used = Set(targets.map(\.service))
                for transport in transports where used.contains(transport.service) { try await transport.refresh() }
                var results: [PushTestResult] = []
                for address in targets {
                    guard let transport = transports.first(where: { $0.service == address.service }) else { continue }
                    let message = PushMessage(
                        address: address,
                        userKey: userKey,
                        content: .refresh(channels: channels, notificationID: nil),
                        expiration: expiration
                    )
                    results.append(PushTestResult(address: address, result: await transport.send([message])[0].result))
                }
                for transport in transports { await transport.shutdown() }
                return results
            } catch {
                for transport in transports { await transport.shutdown() }
                throw error
            }
        }
    }

    /// The push dispatcher's settings from the configuration.
    static func pushSettings(_ configuration: HeraldConfiguration) -> PushSettings {
        var settings = PushSettings()
        settings.minimumInterval = configuration.refreshMinimumInterval
        settings.expiration = configuration.pushExpiration
        settings.lease = configuration.pushLease
        settings.batchSize = configuration.pushBatchSize
        settings.concurrency = configuration.pushStreams
        settings.apnsURL = configuration.apnsURL
        settings.apnsCAFile = configuration.apnsCAFile
        settings.fcmURL = configuration.fcmURL
        settings.pushCAFile = configuration.pushCAFile
        settings.vapidSubject = configuration.vapidSubject
        settings.multiDevice = configuration.stream.multiDevice
        settings.appID = configuration.appID
        settings.badge = configuration.pushBadge
        settings.logPayloads = configuration.logPushPayloads
        settings.badgeCap = configuration.pushBadgeCap
        settings.noDetailText = configuration.noDetailText
        return settings
    }

    /// Starts the database (embedded or not), migrates, and serves HTTP until SIGTERM or SIGINT; then
    /// lets in-flight requests finish, closes the pool and stops the embedded cluster.
    public static func serve(
        _ configuration: HeraldConfiguration,
        metricsRegistry: PrometheusCollectorRegistry,
        logger: Logger
    ) async throws {
        let database = try await openDatabase(configuration, logger: logger)
        let client = PostgresClient(
            configuration: .init(
                conninfo: database.conninfo,
                maximumConnections: configuration.databasePoolSize,
                statementTimeout: configuration.databaseStatementTimeout,
                preparedStatements: configuration.databasePreparedStatements
            ),
            logger: logger
        )
        let migrator: Migrator
        let adminToken: String?
        let console: ConsoleSite?
        let clientFiles: ClientFiles?
        do {
            migrator = try makeMigrator(configuration, client: client, logger: logger)
            let report =
                try await database.directConninfo == database.conninfo
                ? migrator.migrate() : migrate(configuration, database: database, logger: logger)
            logger.info(
                "database schema is current",
                metadata: ["applied": "\(report.applied.count)", "already_applied": "\(report.alreadyApplied)"]
            )
            if database.createdDatabase, let fixtures = configuration.fixturesDirectory ?? FixturesDirectory.locate() {
                let loaded = try await FixtureLoader(client: client).load(directory: fixtures)
                logger.info(
                    "loaded the demo fixtures into the new embedded database",
                    metadata: ["items": "\(loaded.items.count)", "directory": "\(fixtures)"]
                )
            }
            adminToken = try resolveAdminToken(configuration, logger: logger)
            console = try await loadConsole(configuration, logger: logger)
            clientFiles = try loadClientFiles(configuration, logger: logger)
        } catch {
            await client.shutdown()
            try? await database.cluster?.stop()
            throw error
        }

        let fanoutWake = WakeSignal()
        let erasureWake = WakeSignal()
        let secrets: SecretBox
        do {
            secrets = try resolveSecretKey(configuration, logger: logger)
        } catch {
            await client.shutdown()
            try? await database.cluster?.stop()
            throw error
        }
        let replica = configuration.readDatabaseURL.map { url in
            ReadReplica(
                client: PostgresClient(
                    configuration: .init(
                        conninfo: url,
                        maximumConnections: configuration.databasePoolSize,
                        applicationName: "herald-reads",
                        statementTimeout: configuration.databaseStatementTimeout,
                        metricsPrefix: "herald_read_db",
                        preparedStatements: configuration.databasePreparedStatements
                    ),
                    logger: logger
                ),
                primary: client,
                maximumLag: configuration.readMaximumLag,
                logger: logger
            )
        }
        var memory = configuration.memory
        // A token kept by answers from memory must not fall below the compaction bound in between.
        memory.maximumAge = min(memory.maximumAge, configuration.changeRetention / 4)
        let notifier = memory.enabled ? ChangeNotifier(client: client, settings: memory, logger: logger) : nil
        let hub = LiveHub(
            client: client,
            settings: configuration.stream,
            listener: PostgresListener(
                conninfo: database.directConninfo,
                channels: [LiveHint.channel],
                applicationName: "herald-live",
                logger: logger
            ),
            notifier: notifier,
            logger: logger
        )
        var dependencies = HeraldApplication.Dependencies(
            client: client,
            migrator: migrator,
            metricsRegistry: metricsRegistry,
            adminToken: adminToken,
            fanoutWake: fanoutWake,
            erasureWake: erasureWake,
            sync: SyncSettings(hugeGap: configuration.syncHugeGap),
            secrets: secrets,
            hub: hub,
            limits: RequestLimits(configuration.rateLimits),
            console: console,
            replica: replica,
            notifier: notifier
        )
        dependencies.webPushHosts = configuration.webPushHosts
        dependencies.crossOrigin = configuration.crossOrigin
        dependencies.clientFiles = clientFiles
        let pushSettings = pushSettings(configuration)
        let transports = PushDispatcher.transports(client: client, box: secrets, settings: pushSettings, logger: logger)
        // Says at startup whether pushes go to their services or to the log.
        for transport in transports { try? await transport.refresh() }
        let host = configuration.host
        let application = HeraldApplication.build(
            dependencies,
            host: host,
            port: configuration.port,
            logger: logger,
            idleTimeout: configuration.httpIdleTimeout
        ) { port in
            // A plain line on stdout for people and scripts (tests read the port from it).
            Terminal.line("Herald listening on http://\(host):\(port)")
        }
        var services: [any Service] = []
        if let cluster = database.cluster {
            services.append(EmbeddedClusterService(cluster: cluster, logger: logger))
        }
        // Shut down in reverse: HTTP first, then the background work, then the pool it all uses.
        services.append(client)
        if let notifier { services.append(notifier) }
        if let replica {
            services.append(replica.client)
            services.append(replica)
        }
        services.append(FanoutService(client: client, batchSize: configuration.fanoutBatchSize, wake: fanoutWake, logger: logger))
        services.append(ErasureService(client: client, wake: erasureWake, logger: logger))
        services.append(HeraldApplication.scheduler(dependencies, lease: configuration.scheduleLease, logger: logger))
        services.append(HousekeepingService(client: client, logger: logger))
        services.append(ExpiryService(client: client, logger: logger))
        services.append(CompactionService(client: client, retention: configuration.changeRetention, logger: logger))
        services.append(
            PushDispatcher(
                client: client,
                transports: transports,
                settings: pushSettings,
                listener: PostgresListener(conninfo: database.directConninfo, channels: [PushStore.wakeChannel], logger: logger),
                logger: logger
            )
        )
        var webhookSettings = WebhookSettings()
        webhookSettings.timeout = configuration.webhookTimeout
        webhookSettings.lease = configuration.webhookTimeout * 3 + .seconds(2)
        services.append(
            WebhookDispatcher(
                client: client,
                box: secrets,
                settings: webhookSettings,
                listener: PostgresListener(
                    conninfo: database.directConninfo,
                    channels: [WebhookStore.wakeChannel],
                    applicationName: "herald-webhooks",
                    logger: logger
                ),
                logger: logger
            )
        )
        // After the dispatchers and before HTTP: streams close (and their presence goes) before the
        // pool does, and HTTP stops accepting new streams first.
        services.append(hub)
        services.append(application)
        // Last, so first to shut down: waiting long polls answer before HTTP waits for them.
        if let notifier { services.append(notifier.waitCloser) }
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        try await group.run()
    }

    // MARK: - Private

    /// `HERALD_SECRET_KEY`, else the key in `<data dir>/secret.key`, made (mode 0600) on first start.
    static func resolveSecretKey(_ configuration: HeraldConfiguration, logger: Logger) throws -> SecretBox {
        if let key = configuration.secretKey { return try SecretBox(hexKey: key) }
        let path = (configuration.dataDirectory as NSString).appendingPathComponent("secret.key")
        let stored = try SecretFile.loadOrCreate(path, describing: "secret key", isValid: { (try? SecretBox(hexKey: $0)) != nil }) {
            Hex.encode(SecureRandom.bytes(32))
        }
        if stored.created {
            logger.notice("generated the key that seals APNs secrets; keep it with the database backups", metadata: ["path": "\(path)"])
        }
        return try SecretBox(hexKey: stored.secret)
    }

    /// Applies pending migrations over a connection of their own to the server itself, for a
    /// `DATABASE_URL` that names a pooler: the migrator's advisory lock is held by a session, which a
    /// pooler in transaction mode would not keep.
    static func migrate(_ configuration: HeraldConfiguration, database: Database, logger: Logger) async throws -> Migrator.Report {
        let client = PostgresClient(
            configuration: .init(conninfo: database.directConninfo, maximumConnections: 1, metricsPrefix: "herald_direct_db"),
            logger: logger
        )
        do {
            let report = try await makeMigrator(configuration, client: client, logger: logger).migrate()
            await client.shutdown()
            return report
        } catch {
            await client.shutdown()
            throw error
        }
    }

    static func makeMigrator(_ configuration: HeraldConfiguration, client: PostgresClient, logger: Logger) throws -> Migrator {
        try migrator(client: client, migrationsDirectory: configuration.migrationsDirectory, logger: logger)
    }

    /// The admin console's pages, unless `HERALD_CONSOLE=off`. A `console/` directory that is not
    /// found where a repository or release keeps it turns the console off with a warning; one named by
    /// `HERALD_CONSOLE_DIR` must exist.
    static func loadConsole(_ configuration: HeraldConfiguration, logger: Logger) async throws -> ConsoleSite? {
        guard configuration.consoleEnabled else { return nil }
        guard let directory = try RepositoryDirectory.locate("console", configured: configuration.consoleDirectory, what: "console") else {
            logger.warning("no console/ directory beside herald or in the working directory; the admin console is off")
            return nil
        }
        do {
            return try await ConsoleSite.load(ConsoleSettings(directory: directory, sessionLifetime: configuration.consoleSessionLifetime))
        } catch {
            throw ConfigurationError("the console in \(directory) cannot be loaded: \(error)")
        }
    }

    /// The web client's modules for `/client/`: from `HERALD_WEB_DIR` (which must exist), else a `web/`
    /// directory found where a repository or release keeps it, else none (with a notice).
    static func loadClientFiles(_ configuration: HeraldConfiguration, logger: Logger) throws -> ClientFiles? {
        guard let directory = try RepositoryDirectory.locate("web", configured: configuration.webDirectory, what: "web client") else {
            logger.notice("no web/ directory beside herald or in the working directory; /client/ serves nothing")
            return nil
        }
        do {
            return try ClientFiles.load(directory: directory, demo: configuration.demoEnabled)
        } catch {
            throw ConfigurationError("the web client in \(directory) cannot be read: \(error)")
        }
    }

    /// A migrator for the given `sql/` directory, else the one found beside the working directory or
    /// the executable (as `herald migrate` finds it).
    public static func migrator(client: PostgresClient, migrationsDirectory: String? = nil, logger: Logger) throws -> Migrator {
        let directory = try MigrationsDirectory.locate(configured: migrationsDirectory)
        return Migrator(client: client, migrations: try Migration.load(from: directory), logger: logger)
    }

    static func openDatabase(_ configuration: HeraldConfiguration, logger: Logger) async throws -> Database {
        if let url = configuration.databaseURL {
            logger.info("using the database from DATABASE_URL")
            return Database(conninfo: url, directConninfo: configuration.directDatabaseURL ?? url, cluster: nil)
        }
        if configuration.usesPGEnvironment {
            logger.info("using the database named by the PG* environment variables")
            return Database(conninfo: "", directConninfo: configuration.directDatabaseURL ?? "", cluster: nil)
        }
        let directory = (configuration.dataDirectory as NSString).appendingPathComponent("postgres")
        let cluster = try PostgresCluster(directory: directory)
        logger.info("starting the embedded PostgreSQL cluster", metadata: ["directory": "\(cluster.directory)"])
        let started = try await cluster.start()
        let created: Bool
        do {
            created = try await EmbeddedDatabase.prepare(in: cluster, logger: logger)
        } catch {
            if started { try? await cluster.stop() }
            throw error
        }
        logger.info("embedded PostgreSQL is running", metadata: ["socket": "\(cluster.socketDirectory)", "started_now": "\(started)"])
        let conninfo = EmbeddedDatabase.conninfo(cluster)
        return Database(conninfo: conninfo, directConninfo: conninfo, cluster: cluster, startedCluster: started, createdDatabase: created)
    }

    /// With the embedded default and no `HERALD_ADMIN_TOKEN`, generates a token once, keeps it in the
    /// data directory and prints it (never logs it) when it is new.
    static func resolveAdminToken(_ configuration: HeraldConfiguration, logger: Logger) throws -> String? {
        if let token = configuration.adminToken { return token }
        guard configuration.usesEmbeddedDatabase else {
            logger.warning("HERALD_ADMIN_TOKEN is not set: admin routes will refuse every request")
            return nil
        }
        let stored = try AdminToken.loadOrCreate(dataDirectory: configuration.dataDirectory)
        if stored.created {
            Terminal.line("Generated an admin token (kept in \(stored.path)); use it as 'Authorization: Bearer <token>':\n  \(stored.token)")
        } else {
            logger.info("using the admin token kept in the data directory", metadata: ["path": "\(stored.path)"])
        }
        return stored.token
    }
}
