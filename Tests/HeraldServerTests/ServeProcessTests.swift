import AsyncHTTPClient
import Foundation
import HeraldStore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Postgres
import Testing

/// `herald serve` as a user runs it: a real process on the embedded default.
@Suite("herald serve")
struct ServeProcessTests {
    func get(_ url: String) async throws -> (status: Int, body: String) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: body))
    }

    @Test func servesOnTheEmbeddedDefaultAndStopsCleanly() async throws {
        let dataDirectory = NSTemporaryDirectory() + "herald-serve-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        // No DATABASE_URL and no PG* variables: the embedded cluster must be used.
        let herald = try HeraldProcess(
            arguments: ["serve", "--port", "0", "--data-dir", dataDirectory, "--sql-dir", TestPostgres.repositoryRoot() + "/sql"],
            environment: ["HERALD_LOG_LEVEL": "info"]
        )
        let line = try await herald.waitForLine(containing: "Herald listening on")
        let base = try #require(line.split(separator: " ").last.map(String.init))

        let health = try await get(base + "/healthz")
        #expect(health.status == 200)
        #expect(health.body.contains(#""status":"ok""#))

        let ready = try await get(base + "/readyz")
        #expect(ready.status == 200)
        #expect(ready.body.contains(#""status":"ready""#))

        let missing = try await get(base + "/no-such-route")
        #expect(missing.status == 404)
        #expect(missing.body.contains(#""code":"not_found""#))

        let metrics = try await get(base + "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.body.contains("herald_db_pool_connections{state=\"open\"}"))
        #expect(metrics.body.contains("herald_db_pool_max_connections 10"))
        #expect(metrics.body.contains("herald_db_pipeline_waiting 0"))
        // Each request counted once by route, method and status (an unknown path as "NotFound", an
        // error), its duration recorded.
        let healthz = #"{http_route="/healthz",http_request_method="GET",http_response_status_code="200"}"#
        #expect(metrics.body.contains("hb_requests\(healthz) 1\n"))
        #expect(metrics.body.contains("http_server_request_duration_count\(healthz) 1\n"))
        #expect(metrics.body.contains(#"hb_requests{http_route="NotFound",http_request_method="GET",http_response_status_code="404"} 1"#))
        #expect(metrics.body.contains(#"hb_request_errors{http_route="NotFound",http_request_method="GET",error_type="404"} 1"#))
        #expect(metrics.body.contains(#"http_server_active_requests{http_request_method="GET"} 1.0"#))  // this one

        // The admin token was generated, stored privately and shown once.
        let tokenPath = dataDirectory + "/admin-token"
        let token = try String(contentsOfFile: tokenPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.count == 64)
        let permissions = try FileManager.default.attributesOfItem(atPath: tokenPath)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        #expect(herald.printed.filter { $0.contains(token) }.count == 1)

        let cluster = try PostgresCluster(directory: dataDirectory + "/postgres")
        #expect(cluster.isRunning)
        try await expectOwnedByTheApplicationRole(cluster)

        // `herald migrate` beside a running server finds the schema current and leaves the cluster it
        // did not start running.
        let migrate = try HeraldProcess(arguments: ["migrate", "--data-dir", dataDirectory, "--sql-dir", TestPostgres.repositoryRoot() + "/sql"])
        #expect(try await migrate.waitForExit(timeout: .seconds(120)) == 0)
        #expect(migrate.printed.contains { $0.hasPrefix("Database is up to date") })
        #expect(cluster.isRunning)
        #expect(try await get(base + "/readyz").status == 200)

        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit() == 0)
        #expect(!cluster.isRunning, "the embedded cluster must stop with Herald")
    }

    /// Herald's connections to the embedded database are the owner role's, which is no superuser and
    /// owns every object in `public`.
    func expectOwnedByTheApplicationRole(_ cluster: PostgresCluster) async throws {
        let admin = PostgresClient(configuration: .init(conninfo: cluster.conninfo(database: "herald"), maximumConnections: 1))
        defer { Task { await admin.shutdown() } }
        let users = try await admin.query(
            "SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = 'herald' AND application_name = 'herald' AND pid <> pg_backend_pid()"
        ).map { try $0.decode(String.self) }
        #expect(users == ["herald_app"])
        let role = try await admin.query("SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = 'herald_app'")
        let (superuser, createsDatabases, createsRoles) = try #require(try role.first?.decode((Bool, Bool, Bool).self))
        #expect(!superuser && !createsDatabases && !createsRoles)
        #expect(
            try await admin.query("SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'herald'")[0].decode(String.self) == "herald_app"
        )
        let others = try await admin.query(
            """
            SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND pg_get_userbyid(c.relowner) <> 'herald_app'
            UNION ALL
            SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> 'herald_app'
            """
        ).map { try $0.decode(String.self) }
        #expect(others.isEmpty, "owned by another role: \(others)")
        #expect(try await admin.query("SELECT count(*) FROM pg_class WHERE relname = 'herald_schema_migrations'")[0].decode(Int.self) == 1)
    }

    /// A database an earlier version made while connecting as the superuser (it and its tables owned
    /// by the superuser) is handed to the owner role at the next start, and served.
    @Test func anEmbeddedDatabaseMadeAsTheSuperuserIsHandedToTheOwnerRole() async throws {
        let dataDirectory = NSTemporaryDirectory() + "herald-serve-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let cluster = try PostgresCluster(directory: dataDirectory + "/postgres")
        try await cluster.start()
        let admin = PostgresClient(configuration: .init(conninfo: cluster.conninfo(database: "postgres"), maximumConnections: 1))
        try await admin.query("CREATE DATABASE herald")
        await admin.shutdown()
        let old = PostgresClient(configuration: .init(conninfo: cluster.conninfo(database: "herald"), maximumConnections: 1))
        try await Migrator(client: old, migrations: try TestPostgres.repositoryMigrations()).migrate()
        try await old.query("CREATE TABLE kept (id int8 GENERATED ALWAYS AS IDENTITY, note text)")
        try await old.query("INSERT INTO kept (note) VALUES ('from before')")
        await old.shutdown()
        try await cluster.stop()

        let herald = try HeraldProcess(
            arguments: ["serve", "--port", "0", "--data-dir", dataDirectory, "--sql-dir", TestPostgres.repositoryRoot() + "/sql"],
            environment: ["HERALD_LOG_LEVEL": "info"]
        )
        let line = try await herald.waitForLine(containing: "Herald listening on")
        let base = try #require(line.split(separator: " ").last.map(String.init))
        #expect(try await get(base + "/readyz").status == 200)
        #expect(herald.printed.contains { $0.contains("handed the database's objects to its owner role") })
        try await expectOwnedByTheApplicationRole(cluster)
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit() == 0)
    }

    @Test func migrateCommandAppliesOnceThenReportsUpToDate() async throws {
        let dataDirectory = NSTemporaryDirectory() + "herald-migrate-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let arguments = ["migrate", "--data-dir", dataDirectory, "--sql-dir", TestPostgres.repositoryRoot() + "/sql"]
        let first = try HeraldProcess(arguments: arguments)
        #expect(try await first.waitForExit(timeout: .seconds(120)) == 0)
        #expect(first.printed.contains { $0.hasPrefix("Applied ") })
        let second = try HeraldProcess(arguments: arguments)
        #expect(try await second.waitForExit(timeout: .seconds(120)) == 0)
        #expect(second.printed.contains { $0.hasPrefix("Database is up to date") })
        #expect(try !PostgresCluster(directory: dataDirectory + "/postgres").isRunning)
    }

    @Test func badConfigurationFailsWithAClearMessage() async throws {
        let herald = try HeraldProcess(arguments: ["serve", "--log-level", "loud"], environment: ["DATABASE_URL": "postgres://unused"])
        #expect(try await herald.waitForExit() != 0)
        #expect(herald.printed.joined(separator: "\n").contains("unknown log level 'loud'"))
    }
}
