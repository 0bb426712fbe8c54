import HeraldTesting
import Postgres
import Testing

@Suite("Typed errors")
struct ErrorTests {
    @Test func syntaxErrorCarriesItsSQLState() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let error = try await #require(throws: PostgresError.self) {
                try await db.client.query("SELEKT 1")
            }
            #expect(error.code == .syntaxError)
            #expect(error.sqlState == "42601")
            // The client-facing text says what kind of failure it was and nothing of the query.
            #expect(!error.description.contains("SELEKT"))
            #expect(error.debugDescription.contains("SELEKT"))
        }
    }

    @Test func uniqueViolationIsTypedWithItsConstraint() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE secret_accounts (email text CONSTRAINT secret_accounts_email_key UNIQUE)")
            try await db.client.query("INSERT INTO secret_accounts VALUES (\("a@example.com"))")
            let error = try await #require(throws: PostgresError.self) {
                try await db.client.query("INSERT INTO secret_accounts VALUES (\("a@example.com"))")
            }
            #expect(error.code == .uniqueViolation)
            #expect(error.sqlState == "23505")
            #expect(error.constraintName == "secret_accounts_email_key")
            #expect(error.description == "unique violation (SQLSTATE 23505)")
            #expect(!error.description.contains("secret_accounts"))
            #expect(!error.description.contains("a@example.com"))
        }
    }

    @Test func connectionFailureIsConnectionLost() async throws {
        let client = PostgresClient(configuration: .init(conninfo: "host=/nonexistent-herald-socket-dir port=1 connect_timeout=2", maximumConnections: 1))
        let error = try await #require(throws: PostgresError.self) {
            try await client.query("SELECT 1")
        }
        #expect(error.code == .connectionLost)
        await client.shutdown()
    }

    @Test func cancellingATaskCancelsItsStatement() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let client = db.client
            let task = Task { try await client.query("SELECT pg_sleep(30)") }
            // Cancel once the statement is really running on the server.
            while try await client.query("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'").first?.decode(Int.self) == 0 {
                await Task.yield()
            }
            task.cancel()
            let error = try await #require(throws: PostgresError.self) { try await task.value }
            #expect(error.code == .queryCanceled)
            // The connection is still good for the next lease.
            #expect(try await client.query("SELECT 7").first?.decode(Int.self) == 7)
        }
    }
}
