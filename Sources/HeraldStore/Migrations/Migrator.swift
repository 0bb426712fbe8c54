import Logging
import Postgres

/// Applies the migrations in `sql/` in order, each once, each in its own transaction.
///
/// Applied migrations are recorded with their checksum in `herald_schema_migrations`. Replicas starting
/// at once serialise on an advisory lock, so each file still runs exactly once. A failing file rolls
/// back completely (PostgreSQL DDL is transactional), leaving the schema as it was.
public struct Migrator: Sendable {
    /// What `migrate()` did.
    public struct Report: Sendable, Equatable {
        public var applied: [String]
        public var alreadyApplied: Int
    }

    /// Where the database stands relative to this build's migrations.
    public struct Status: Sendable, Equatable {
        public var pending: [String]
        public var problems: [MigrationError]
        public var isCurrent: Bool { pending.isEmpty && problems.isEmpty }
    }

    /// `hashtext('herald_schema_migrations')`-style constant: any fixed 64-bit key unique to Herald.
    static let advisoryLockKey = 7_236_155_123_904_117_301

    public let client: PostgresClient
    public let migrations: [Migration]
    let logger: Logger

    public init(client: PostgresClient, migrations: [Migration], logger: Logger = Logger(label: "herald.migrations")) {
        self.client = client
        self.migrations = migrations
        self.logger = logger
    }

    /// Applies every pending migration. Refuses to do anything when an applied migration was edited or
    /// is unknown to this build.
    @discardableResult
    public func migrate() async throws -> Report {
        try await client.withConnection { connection in
            // Waiting for another process's migrations and building indexes may take longer than the
            // pool's statement timeout allows a request; the connection's own is restored afterwards.
            let timeout = try await connection.query("SELECT current_setting('statement_timeout')")[0].decode(String.self)
            let restore: PostgresQuery = "SELECT set_config('statement_timeout', \(timeout), false)"
            try await connection.query("SELECT set_config('statement_timeout', '0', false)")
            try await connection.query("SELECT pg_advisory_lock(\(Self.advisoryLockKey))")
            do {
                let report = try await migrateLocked(connection)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))")
                try await connection.query(restore)
                return report
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))")
                _ = try? await connection.query(restore)
                throw error
            }
        }
    }

    /// Compares the database with this build's migrations without changing anything.
    public func status() async throws -> Status {
        try await client.withConnection { connection in
            let applied = try await appliedChecksums(connection)
            return compare(applied: applied)
        }
    }

    // MARK: - Private

    private func migrateLocked(_ connection: PostgresConnection) async throws -> Report {
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS herald_schema_migrations (
                name text PRIMARY KEY,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """
        )
        let applied = try await appliedChecksums(connection)
        let status = compare(applied: applied)
        if let problem = status.problems.first { throw problem }
        var report = Report(applied: [], alreadyApplied: applied.count)
        for migration in migrations where applied[migration.name] == nil {
            do {
                try await connection.withTransaction { connection in
                    try await connection.executeScript(migration.sql)
                    try await connection.query(
                        "INSERT INTO herald_schema_migrations (name, checksum) VALUES (\(migration.name), \(migration.checksum))"
                    )
                }
            } catch let error as PostgresError {
                logger.error("migration failed", metadata: ["migration": "\(migration.name)", "error": logger.describe(error)])
                // The operator needs the server's reason to fix the file; this text goes to the log and
                // the terminal, never to an HTTP client.
                throw MigrationError.failed(name: migration.name, reason: error.serverMessage)
            }
            logger.info("applied migration", metadata: ["migration": "\(migration.name)"])
            report.applied.append(migration.name)
        }
        return report
    }

    private func appliedChecksums(_ connection: PostgresConnection) async throws -> [String: String] {
        let exists = try await connection.query("SELECT to_regclass('herald_schema_migrations') IS NOT NULL")
        guard let row = exists.first, try row.decode(column: 0, as: Bool.self) else { return [:] }
        var applied: [String: String] = [:]
        for row in try await connection.query("SELECT name, checksum FROM herald_schema_migrations") {
            let (name, checksum) = try row.decode((String, String).self)
            applied[name] = checksum
        }
        return applied
    }

    private func compare(applied: [String: String]) -> Status {
        var problems: [MigrationError] = []
        let known = Set(migrations.map(\.name))
        for migration in migrations {
            if let checksum = applied[migration.name], !migration.accepts(checksum: checksum) {
                problems.append(.checksumMismatch(name: migration.name, applied: checksum, current: migration.checksum))
            }
        }
        for name in applied.keys.sorted() where !known.contains(name) {
            problems.append(.unknownApplied(name: name))
        }
        let pending = migrations.map(\.name).filter { applied[$0] == nil }
        return Status(pending: pending, problems: problems)
    }
}
