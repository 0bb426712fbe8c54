import HeraldTesting
import Postgres
import Synchronization
import Testing

@Suite("Transactions")
struct TransactionTests {
    struct Boom: Error {}

    @Test func commitKeepsAndThrowRollsBack() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE notes (body text)")
            try await db.client.withTransaction { connection in
                try await connection.query("INSERT INTO notes VALUES ('kept')")
            }
            await #expect(throws: Boom.self) {
                try await db.client.withTransaction { connection in
                    try await connection.query("INSERT INTO notes VALUES ('lost 1')")
                    try await connection.query("INSERT INTO notes VALUES ('lost 2')")
                    throw Boom()
                }
            }
            // A failing statement also rolls back what came before it.
            await #expect(throws: PostgresError.self) {
                try await db.client.withTransaction { connection in
                    try await connection.query("INSERT INTO notes VALUES ('lost 3')")
                    try await connection.query("INSERT INTO missing_table VALUES (1)")
                }
            }
            let rows = try await db.client.query("SELECT body FROM notes ORDER BY body")
            #expect(try rows.map { try $0.decode(String.self) } == ["kept"])
            // The connection that saw the rollback is healthy and not left inside a transaction.
            let inTransaction = try #require(try await db.client.query("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'").first)
            #expect(try inTransaction.decode(Int.self) == 0)
        }
    }

    @Test func serializationFailureIsRetried() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 2) { (db: TestDatabase) async throws in
            let client = db.client
            try await client.query("CREATE TABLE counters (id int PRIMARY KEY, value int NOT NULL)")
            try await client.query("INSERT INTO counters VALUES (1, 0)")
            let attempts = Atomic<Int>(0)
            let final = try await client.withRetryingTransaction(isolation: .repeatableRead) { connection in
                let attempt = attempts.add(1, ordering: .relaxed).newValue
                // Take the snapshot, then let another connection commit a change to the same row.
                let value = try #require(try await connection.query("SELECT value FROM counters WHERE id = 1").first).decode(Int.self)
                if attempt == 1 {
                    try await client.query("UPDATE counters SET value = value + 100 WHERE id = 1")
                }
                // On the first attempt this update conflicts with the concurrent commit: 40001.
                try await connection.query("UPDATE counters SET value = \(value + 1) WHERE id = 1")
                return value + 1
            }
            #expect(attempts.load(ordering: .relaxed) == 2)
            #expect(final == 101)
            let stored = try #require(try await client.query("SELECT value FROM counters WHERE id = 1").first)
            #expect(try stored.decode(Int.self) == 101)
        }
    }

    @Test func serializationFailureSurfacesWithoutRetry() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 2) { (db: TestDatabase) async throws in
            let client = db.client
            try await client.query("CREATE TABLE counters (id int PRIMARY KEY, value int NOT NULL)")
            try await client.query("INSERT INTO counters VALUES (1, 0)")
            let error = try await #require(throws: PostgresError.self) {
                try await client.withTransaction(isolation: .repeatableRead) { connection in
                    try await connection.query("SELECT value FROM counters WHERE id = 1")
                    try await client.query("UPDATE counters SET value = value + 100 WHERE id = 1")
                    try await connection.query("UPDATE counters SET value = 1 WHERE id = 1")
                }
            }
            #expect(error.code == .serializationFailure)
            #expect(error.sqlState == "40001")
            #expect(error.isTransient)
        }
    }
}
