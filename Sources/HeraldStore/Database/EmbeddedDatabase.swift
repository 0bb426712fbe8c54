import Logging
import Postgres

/// The database `herald serve` keeps in its embedded cluster, and the role it connects as.
///
/// Herald connects as `herald_app`, a role that owns the database and everything in it — so it runs
/// its migrations — but is no superuser: it cannot read files on the server, run programs, or reach
/// other databases' data. The cluster's superuser only creates the role and the database, and hands
/// over a database an earlier version made while connecting as the superuser.
public enum EmbeddedDatabase {
    public static let name = "herald"
    public static let role = "herald_app"

    /// Makes the role and the database when missing and gives the role everything in the database
    /// still owned by someone else. Returns whether the database had to be created.
    public static func prepare(in cluster: PostgresCluster, logger: Logger) async throws -> Bool {
        let created = try await withSuperuser(cluster, database: "postgres", logger: logger) { admin in
            if try await admin.query("SELECT 1 FROM pg_roles WHERE rolname = \(role)").isEmpty {
                // Defaults: NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS.
                try await admin.query(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN"))
            }
            let owner = try await admin.query("SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = \(name)").first
            if owner == nil {
                try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \"\(name)\" OWNER \(role)"))
                return true
            }
            if try owner?.decode(String.self) != role {
                try await admin.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \"\(name)\" OWNER TO \(role)"))
            }
            return false
        }
        if !created {
            let moved = try await withSuperuser(cluster, database: name, logger: logger) { admin in
                try await admin.withTransaction { connection in
                    let statements = try await connection.query(PostgresQuery(unsafeSQL: handOver)).map { try $0.decode(String.self) }
                    for statement in statements { try await connection.query(PostgresQuery(unsafeSQL: statement)) }
                    return statements.count
                }
            }
            if moved > 0 {
                logger.notice("handed the database's objects to its owner role", metadata: ["role": "\(role)", "objects": "\(moved)"])
            }
        }
        return created
    }

    /// The connection string Herald uses.
    public static func conninfo(_ cluster: PostgresCluster) -> String {
        cluster.conninfo(database: name, user: role)
    }

    /// The statements that give the role every table, view, sequence of its own, routine and type in
    /// `public` it does not own yet (a sequence a table owns follows its table; indexes follow theirs).
    private static let handOver = """
        SELECT format('ALTER %s %s OWNER TO \(role)',
            CASE c.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'TABLE' END,
            c.oid::regclass)
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S') AND pg_get_userbyid(c.relowner) <> '\(role)'
            AND NOT (c.relkind = 'S' AND EXISTS (
                SELECT 1 FROM pg_depend d
                WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
        UNION ALL
        SELECT format('ALTER ROUTINE %s OWNER TO \(role)', p.oid::regprocedure)
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND p.prokind IN ('f', 'p') AND pg_get_userbyid(p.proowner) <> '\(role)'
        UNION ALL
        SELECT format('ALTER TYPE %s OWNER TO \(role)', t.oid::regtype)
        FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE n.nspname = 'public' AND t.typtype IN ('e', 'd', 'r') AND pg_get_userbyid(t.typowner) <> '\(role)'
        """

    private static func withSuperuser<R: Sendable>(
        _ cluster: PostgresCluster,
        database: String,
        logger: Logger,
        _ body: (PostgresClient) async throws -> R
    ) async throws -> R {
        let admin = PostgresClient(configuration: .init(conninfo: cluster.conninfo(database: database), maximumConnections: 1), logger: logger)
        do {
            let result = try await body(admin)
            await admin.shutdown()
            return result
        } catch {
            await admin.shutdown()
            throw error
        }
    }
}
