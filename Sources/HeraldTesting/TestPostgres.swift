import Foundation
import HeraldStore
import Logging
import NIOPosix
import Postgres
import Synchronization

/// Real PostgreSQL for tests.
///
/// One throwaway cluster per test process (under `/tmp`, fsync off), started on first use and removed
/// when the process exits; or, when `HERALD_TEST_DATABASE_URL` is set, that server instead. Each call to
/// `withDatabase` gets a fresh database of its own, dropped afterwards, so tests never see each other's
/// rows and can run in parallel.
public enum TestPostgres {
    /// Which throwaway cluster a test database lives on.
    public enum ClusterChoice: Sendable {
        /// The cluster most tests share, in parallel.
        case shared
        /// A second cluster for tests that observe the cluster-wide transaction horizon (sync): an open
        /// transaction in any database of a cluster holds back what its readers may see, so these
        /// tests must not share a cluster with unrelated ones. Run such suites `.serialized`.
        case horizonSensitive
        /// A third cluster for the push suite, which is horizon-sensitive too (a device's sync answers
        /// the refresh wants its snapshot covers) and runs beside the sync suite.
        case push
        /// A fourth for the client library's suite: it syncs through a real `herald serve` and compares
        /// with fresh loads, so it is horizon-sensitive too.
        case client
        /// A fifth for the push services' end-to-end suite (a `herald serve` whose devices sync), which
        /// would otherwise hold back the push suite's horizon while both run.
        case pushServices
    }

    /// Creates a fresh database (migrated with `sql/` unless `migrated` is false), hands a pool on it to
    /// `body`, then closes the pool and drops the database.
    public static func withDatabase<R: Sendable>(
        migrated: Bool = true,
        maximumConnections: Int = 4,
        cluster: ClusterChoice = .shared,
        _ body: (TestDatabase) async throws -> R
    ) async throws -> R {
        let server: TestServer
        switch cluster {
        case .shared: server = try await TestServer.shared.value
        case .horizonSensitive: server = try await TestServer.horizonSensitive.value
        case .push: server = try await TestServer.push.value
        case .client: server = try await TestServer.client.value
        case .pushServices: server = try await TestServer.pushServices.value
        }
        let name = "herald_test_\(UUID().uuidString.prefix(8).lowercased())"
        try await server.createDatabase(name, migrated: migrated)
        let conninfo = try server.conninfo(database: name)
        let client = PostgresClient(
            configuration: .init(conninfo: conninfo, maximumConnections: maximumConnections, preparedStatements: server.preparedStatements),
            logger: testLogger
        )
        let database = TestDatabase(
            name: name,
            conninfo: conninfo,
            directConninfo: try server.directConninfo(database: name),
            preparedStatements: server.preparedStatements,
            client: client
        )
        // The pool's shutdown waits for every connection to come back: one a test's task still holds
        // (waiting for something that never comes) fails the test after a minute instead of hanging it.
        @Sendable func shutDown() async throws {
            try await withTimeout(.seconds(60), what: "the test's database connections to be returned") { await client.shutdown() }
        }
        let result: R
        do {
            result = try await body(database)
        } catch {
            try? await shutDown()
            try? await server.dropDatabase(name)
            throw error
        }
        do {
            try await shutDown()
        } catch {
            try? await server.dropDatabase(name)
            throw error
        }
        try await server.dropDatabase(name)
        return result
    }

    /// Stops and removes the throwaway clusters of earlier test processes that are gone without
    /// cleaning up (killed, say); done automatically before a process starts its first cluster.
    public static func sweepOrphanedClusters() async throws {
        try await NIOThreadPool.singleton.runIfActive { TestClusterCleanup.sweepOrphans() }
    }

    /// A cluster of the test's own, for tests that restart or stop the server. Removed afterwards.
    public static func withPrivateCluster<R: Sendable>(_ body: (PostgresCluster) async throws -> R) async throws -> R {
        let directory = NSTemporaryDirectory() + "herald-private-\(UUID().uuidString.prefix(8))"
        let cluster = try PostgresCluster(directory: directory, durable: false)
        try await cluster.start()
        defer {
            try? cluster.stopBlocking(immediate: true)
            try? FileManager.default.removeItem(atPath: directory)
        }
        return try await body(cluster)
    }

    /// A primary and a hot standby streaming from it (`pg_basebackup`, then streaming replication),
    /// both of the test's own and removed afterwards. `applyDelay` holds the standby's replay back by
    /// that much (`recovery_min_apply_delay`), to make it lag on purpose.
    public static func withStandby<R: Sendable>(
        applyDelay: Duration? = nil,
        _ body: (_ primary: PostgresCluster, _ standby: PostgresCluster) async throws -> R
    ) async throws -> R {
        try await withPrivateCluster { primary in
            let directory = NSTemporaryDirectory() + "herald-standby-\(UUID().uuidString.prefix(8))"
            var standby = try PostgresCluster(directory: directory, durable: false)
            if let applyDelay {
                let milliseconds = applyDelay.components.seconds * 1000 + applyDelay.components.attoseconds / 1_000_000_000_000_000
                standby.extraSettings = ["recovery_min_apply_delay = '\(milliseconds)ms'"]
            }
            defer {
                try? standby.stopBlocking(immediate: true)
                try? FileManager.default.removeItem(atPath: directory)
            }
            try await standby.createStandby(of: primary)
            try await standby.start()
            return try await body(primary, standby)
        }
    }

    /// The repository's `sql/` migrations.
    public static func repositoryMigrations() throws -> [Migration] {
        try Migration.load(from: repositoryRoot() + "/sql")
    }

    /// The repository root, found from this source file's location.
    public static func repositoryRoot(file: StaticString = #filePath) -> String {
        URL(fileURLWithPath: "\(file)").deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    static let testLogger: Logger = {
        var logger = Logger(label: "herald.test")
        logger.logLevel = .warning
        return logger
    }()
}

/// A fresh database for one test.
public struct TestDatabase: Sendable {
    public let name: String
    /// What Herald is given as `DATABASE_URL`: the server, or PgBouncer in front of it when the suite
    /// runs through one (`HERALD_TEST_PGBOUNCER=on`).
    public let conninfo: String
    /// The server itself, never a pooler: for LISTEN, session-level settings and locks, and tests of
    /// the driver.
    public let directConninfo: String
    /// Whether pools on `conninfo` may prepare named statements (see `PgBouncer`).
    public let preparedStatements: Bool
    /// A pool on `conninfo`.
    public let client: PostgresClient

    /// The environment of a `herald` process on this database: `DATABASE_URL`, and with PgBouncer in
    /// front, the direct URL for LISTEN and migrations and unnamed statements if it needs them.
    public var heraldEnvironment: [String: String] {
        var environment = ["DATABASE_URL": conninfo]
        if directConninfo != conninfo { environment["HERALD_DIRECT_DATABASE_URL"] = directConninfo }
        if !preparedStatements { environment["HERALD_DB_PREPARED_STATEMENTS"] = "off" }
        return environment
    }

    /// Runs `body` while the database refuses new connections (`ALLOW_CONNECTIONS false`, which binds
    /// superusers too); connections already open keep working. Set from the cluster's `postgres`
    /// database: a database cannot refuse connections from within itself.
    public func refusingNewConnections<R: Sendable>(_ body: () async throws -> R) async throws -> R {
        let admin = PostgresClient(
            configuration: .init(conninfo: try PostgresConninfo.settingDatabase("postgres", in: conninfo), maximumConnections: 1),
            logger: TestPostgres.testLogger
        )
        func allow(_ allowed: Bool) async throws {
            try await admin.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \"\(name)\" WITH ALLOW_CONNECTIONS \(allowed)"))
        }
        do {
            try await allow(false)
            let result = try await body()
            try await allow(true)
            await admin.shutdown()
            return result
        } catch {
            try? await allow(true)
            await admin.shutdown()
            throw error
        }
    }
}

/// The server the test process uses, and the bookkeeping to create databases on it.
actor TestServer {
    static let shared = Task { try await TestServer.start(prefix: "herald-test") }
    static let horizonSensitive = Task { try await TestServer.start(prefix: "herald-test-sync") }
    static let push = Task { try await TestServer.start(prefix: "herald-test-push") }
    static let client = Task { try await TestServer.start(prefix: "herald-test-client") }
    static let pushServices = Task { try await TestServer.start(prefix: "herald-test-services") }

    let adminConninfo: String
    let baseConninfo: String
    let admin: PostgresClient
    /// In front of the cluster when the suite runs through PgBouncer (`HERALD_TEST_PGBOUNCER=on`).
    let bouncer: PgBouncer?
    nonisolated var preparedStatements: Bool { bouncer?.keepsPreparedStatements ?? true }
    /// Prepared once; concurrent first callers wait on the same task (the actor is reentrant).
    private var template: Task<Void, any Error>?

    init(baseConninfo: String, adminConninfo: String, bouncer: PgBouncer? = nil) {
        self.baseConninfo = baseConninfo
        self.adminConninfo = adminConninfo
        self.bouncer = bouncer
        self.admin = PostgresClient(configuration: .init(conninfo: adminConninfo, maximumConnections: 1), logger: TestPostgres.testLogger)
    }

    static func start(prefix: String) async throws -> TestServer {
        if let url = ProcessInfo.processInfo.environment["HERALD_TEST_DATABASE_URL"], !url.isEmpty {
            return TestServer(baseConninfo: url, adminConninfo: url)
        }
        try await TestClusterCleanup.sweepOnce.value
        let directory = NSTemporaryDirectory() + "\(prefix)-\(getpid())"
        let cluster = try PostgresCluster(directory: directory, durable: false)
        TestClusterCleanup.register(cluster)
        try await cluster.start()
        var bouncer: PgBouncer?
        if ProcessInfo.processInfo.environment["HERALD_TEST_PGBOUNCER"] == "on" {
            bouncer = try await PgBouncer.start(in: directory + "/pgbouncer", before: cluster)
        }
        return TestServer(
            baseConninfo: cluster.conninfo(database: "postgres"),
            adminConninfo: cluster.conninfo(database: "postgres"),
            bouncer: bouncer
        )
    }

    /// A test's way to `database`: through PgBouncer when the suite runs through one.
    nonisolated func conninfo(database: String) throws -> String {
        if let bouncer { return bouncer.conninfo(database: database) }
        return try directConninfo(database: database)
    }

    /// The server itself: for the template's migration and the tests that need a session.
    nonisolated func directConninfo(database: String) throws -> String {
        try PostgresConninfo.settingDatabase(database, in: baseConninfo)
    }

    /// Databases are created one at a time: `CREATE DATABASE … TEMPLATE` needs the template idle.
    ///
    /// A transaction a failed test left open (its task waiting for a signal that never comes) is ended
    /// after five minutes: else whatever waits for its locks would wait for ever instead of failing.
    func createDatabase(_ name: String, migrated: Bool) async throws {
        if migrated {
            try await prepareTemplate()
            try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \"\(name)\" TEMPLATE herald_test_template"))
        } else {
            try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \"\(name)\""))
        }
        try await admin.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \"\(name)\" SET idle_in_transaction_session_timeout = '5min'"))
    }

    func dropDatabase(_ name: String) async throws {
        try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)"))
    }

    /// A database with every migration applied, copied for each test (much faster than migrating).
    private func prepareTemplate() async throws {
        if let template { return try await template.value }
        let task = Task { try await createTemplate() }
        template = task
        try await task.value
    }

    private func createTemplate() async throws {
        try await admin.query("DROP DATABASE IF EXISTS herald_test_template WITH (FORCE)")
        try await admin.query("CREATE DATABASE herald_test_template")
        let client = PostgresClient(
            configuration: .init(conninfo: try directConninfo(database: "herald_test_template"), maximumConnections: 1),
            logger: TestPostgres.testLogger
        )
        do {
            try await Migrator(client: client, migrations: try TestPostgres.repositoryMigrations(), logger: TestPostgres.testLogger).migrate()
            await client.shutdown()
        } catch {
            await client.shutdown()
            throw error
        }
    }
}

/// Stops and deletes the test process's clusters when the process exits, and those of earlier test
/// processes that could not (killed, or their output pipe closed under them).
enum TestClusterCleanup {
    private static let clusters = Mutex<[PostgresCluster]>([])

    /// Runs `sweepOrphans` once per process, before its first cluster starts.
    static let sweepOnce = Task { try await TestPostgres.sweepOrphanedClusters() }

    /// Stops and removes the per-process clusters (`herald-test…-<pid>` in the temporary directory)
    /// whose process is gone: `atexit` never ran for a test process that was killed, and its server
    /// would otherwise live on. Clusters of test processes still running are left alone. Blocks.
    static func sweepOrphans() {
        let temporary = NSTemporaryDirectory()
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: temporary) else { return }
        for name in names where name.hasPrefix("herald-test") {
            guard let last = name.split(separator: "-").last, let pid = pid_t(last), pid > 0 else { continue }
            // Signal 0 only asks whether the process exists; EPERM means it does, as someone else's.
            if kill(pid, 0) == 0 || errno == EPERM { continue }
            let directory = temporary + (temporary.hasSuffix("/") ? "" : "/") + name
            guard FileManager.default.fileExists(atPath: directory + "/data/PG_VERSION"),
                let cluster = try? PostgresCluster(directory: directory, durable: false)
            else { continue }
            try? cluster.stopBlocking(immediate: true)
            PgBouncer.stopOrphan(in: directory + "/pgbouncer")
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    static func register(_ newCluster: PostgresCluster) {
        let first = clusters.withLock { clusters in
            clusters.append(newCluster)
            return clusters.count == 1
        }
        guard first else { return }
        atexit {
            TestClusterCleanup.clusters.withLock { clusters in
                for cluster in clusters {
                    PgBouncer.stopOrphan(in: cluster.directory + "/pgbouncer")
                    try? cluster.stopBlocking(immediate: true)
                    try? FileManager.default.removeItem(atPath: cluster.directory)
                }
            }
        }
    }
}
