import Foundation
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import Postgres
import Prometheus
import Testing

/// The operations endpoints, served in process against a real database.
@Suite("Operations routes")
struct OperationsRouteTests {
    func application(_ db: TestDatabase) throws -> some ApplicationProtocol {
        try heraldApplication(db, adminToken: nil)
    }

    struct ErrorEnvelope: Decodable {
        struct Body: Decodable {
            var code: String
            var message: String
        }
        var error: Body
    }

    @Test func readyOnAMigratedDatabase() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                try await client.execute(uri: "/healthz", method: .get) { response in
                    #expect(response.status == .ok)
                }
                try await client.execute(uri: "/readyz", method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(String(buffer: response.body) == #"{"status":"ready"}"#)
                }
                try await client.execute(uri: "/metrics", method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
                }
            }
        }
    }

    @Test func notReadyWhileMigrationsArePending() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                try await client.execute(uri: "/readyz", method: .get) { response in
                    #expect(response.status == .serviceUnavailable)
                    let envelope = try JSONDecoder().decode(ErrorEnvelope.self, from: Data(String(buffer: response.body).utf8))
                    #expect(envelope.error.code == "not_ready")
                    #expect(envelope.error.message.contains("not applied"))
                }
                // Liveness does not depend on the database.
                try await client.execute(uri: "/healthz", method: .get) { response in
                    #expect(response.status == .ok)
                }
            }
        }
    }

    @Test func notReadyWhenTheDatabaseIsUnreachable() async throws {
        let client = PostgresClient(configuration: .init(conninfo: "host=/nonexistent-herald port=1 connect_timeout=1", maximumConnections: 1))
        let dependencies = HeraldApplication.Dependencies(
            client: client,
            migrator: Migrator(client: client, migrations: try TestPostgres.repositoryMigrations()),
            metricsRegistry: PrometheusCollectorRegistry(),
            adminToken: nil
        )
        try await Application(router: HeraldApplication.buildRouter(dependencies).router).test(.router) { http in
            try await http.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let body = String(buffer: response.body)
                #expect(body.contains(#""code":"not_ready""#))
                // Nothing of the connection string or libpq's message leaks.
                #expect(!body.contains("nonexistent"))
            }
        }
        await client.shutdown()
    }

    @Test func unknownRoutesAndMethodsAnswerJSONErrors() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                try await client.execute(uri: "/v1/nothing-here", method: .get) { response in
                    #expect(response.status == .notFound)
                    #expect(response.headers[.contentType] == "application/json; charset=utf-8")
                    let envelope = try JSONDecoder().decode(ErrorEnvelope.self, from: Data(String(buffer: response.body).utf8))
                    #expect(envelope.error.code == "not_found")
                    #expect(!envelope.error.message.isEmpty)
                }
                // A route's path with another method: 405 and the methods it takes (RFC 9110 §15.5.6).
                try await client.execute(uri: "/healthz", method: .delete) { response in
                    #expect(response.status == .methodNotAllowed)
                    #expect(response.headers[.allow] == "GET")
                    let envelope = try JSONDecoder().decode(ErrorEnvelope.self, from: Data(String(buffer: response.body).utf8))
                    #expect(envelope.error.code == "method_not_allowed")
                }
                // Path parameters match any segment; a path with two routes lists both methods.
                try await client.execute(uri: "/v1/notifications/42", method: .post) { response in
                    #expect(response.status == .methodNotAllowed)
                    #expect(response.headers[.allow] == "DELETE, GET, PATCH")
                }
                try await client.execute(uri: "/v1/notifications/42/extra", method: .post) { response in
                    #expect(response.status == .notFound)
                    #expect(response.headers[.allow] == nil)
                }
            }
        }
    }

    /// HTTP connections are served on the database client's threads; a database that holds every
    /// connection (a lock, a slow query) must not keep `/healthz` from answering.
    @Test func healthzAnswersWhileEveryDatabaseConnectionIsBlocked() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let app = HeraldApplication.build(
                try heraldDependencies(db, adminToken: nil),
                host: "127.0.0.1",
                port: 0,
                logger: Logger(label: "test.operations")
            )
            let holder = PostgresClient(configuration: .init(conninfo: db.directConninfo, maximumConnections: 1))
            try await holder.query("SELECT pg_advisory_lock(4242)")
            // Every connection of the pool, each on its thread, waits on the lock inside libpq.
            let blocked = (0..<db.client.configuration.maximumConnections).map { _ in
                Task { try await db.client.query("SELECT pg_advisory_xact_lock(4242)") }
            }
            do {
                try await withTimeout(.seconds(10), what: "every pool connection waiting on the lock") {
                    while try await holder.query(
                        "SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
                    ).first?.decode(Int.self) != blocked.count {
                        await Task.yield()
                    }
                }
                try await app.test(.live) { client in
                    // Let go before the server shuts down, whatever happens here: a connection task
                    // stuck behind the blocked threads would otherwise hold up the shutdown, and the
                    // test would hang, not fail.
                    let outcome: RawHTTPExchange.Outcome
                    do {
                        let request = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                        outcome = try await RawHTTPExchange.send(Array(request.utf8), port: try #require(client.port), timeout: .seconds(10))
                    } catch {
                        _ = try? await holder.query("SELECT pg_advisory_unlock_all()")
                        throw error
                    }
                    try await holder.query("SELECT pg_advisory_unlock_all()")
                    #expect(outcome.response.hasPrefix("HTTP/1.1 200"), "\(outcome.response.prefix(200))")
                }
            } catch {
                _ = try? await holder.query("SELECT pg_advisory_unlock_all()")
                for task in blocked { _ = try? await task.value }
                await holder.shutdown()
                throw error
            }
            try await holder.query("SELECT pg_advisory_unlock_all()")
            for task in blocked { _ = try await task.value }
            await holder.shutdown()
        }
    }
}
