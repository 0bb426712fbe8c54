import Foundation
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Postgres
import Prometheus
import Testing

/// The operations endpoints, served in process against a real database.
@Suite("Operations routes")
struct OperationsRouteTests {
    func application(_ db: TestDatabase) throws -> some ApplicationProtocol {
        let dependencies = HeraldApplication.Dependencies(
            client: db.client,
            migrator: Migrator(client: db.client, migrations: try TestPostgres.repositoryMigrations()),
            metricsRegistry: PrometheusCollectorRegistry(),
            adminToken: nil
        )
        return Application(router: HeraldApplication.buildRouter(dependencies).router)
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
}
