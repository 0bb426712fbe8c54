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
            let inTransaction = try #require(
                try await db.client.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'"
                ).first
            )
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

    // MARK: - One round trip

    @Test func aSentTransactionCommitsInOrderAndEachStatementSeesTheOnesBefore() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 1) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE notes (id int PRIMARY KEY, body text NOT NULL)")
            let results = try await db.client.transaction(
                [
                    "INSERT INTO notes VALUES (1, \("one"))",
                    "UPDATE notes SET body = body || \("+") WHERE id = 1",
                    "SELECT body, txid_current_if_assigned() IS NOT NULL FROM notes",
                    "SELECT current_setting('transaction_isolation')",
                ],
                isolation: .repeatableRead
            )
            #expect(results.count == 4)
            #expect(results[0].affectedRows == 1)
            #expect(results[1].affectedRows == 1)
            let row = try #require(results[2].first)
            #expect(try row.decode((String, Bool).self) == ("one+", true))
            #expect(try results[3].first?.decode(String.self) == "repeatable read")
            // Committed: another statement, outside the transaction, sees it.
            #expect(try await db.client.query("SELECT body FROM notes").first?.decode(String.self) == "one+")
            // The statements were prepared once and are reused by name on the next call.
            try await db.client.transaction(["UPDATE notes SET body = body || \("+") WHERE id = 1"])
            let prepared = try await db.client.query("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE 'UPDATE notes%'")
            #expect(try prepared.first?.decode(Int.self) == 1)
        }
    }

    @Test func aFailingStatementInASentTransactionCommitsNothing() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 1) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE notes (id int PRIMARY KEY)")
            try await db.client.query("INSERT INTO notes VALUES (1)")
            // The second statement fails; the first is rolled back, the third never runs.
            let error = try await #require(throws: PostgresError.self) {
                try await db.client.transaction([
                    "INSERT INTO notes VALUES (2)",
                    "INSERT INTO notes VALUES (1)",
                    "INSERT INTO notes VALUES (3)",
                ])
            }
            #expect(error.sqlState == "23505")
            #expect(error.code != .connectionLost)
            let ids = try await db.client.query("SELECT id FROM notes ORDER BY id").map { try $0.decode(Int.self) }
            #expect(ids == [1])
            // The one connection went back idle, outside any transaction, and keeps working.
            let state = try await db.client.query(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'"
            )
            #expect(try state.first?.decode(Int.self) == 0)
            try await db.client.transaction(["INSERT INTO notes VALUES (4)"])
            #expect(try await db.client.query("SELECT count(*) FROM notes").first?.decode(Int.self) == 2)
        }
    }

    @Test func aSentTransactionIsSentAgainAfterATransientFailureOrAStalePlan() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 1) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE notes (id int PRIMARY KEY)")
            try await db.client.query("CREATE SEQUENCE attempts")
            // Fails with a deadlock (40P01) on its first call only: sequences ignore rollbacks.
            try await db.client.query(
                """
                CREATE FUNCTION flaky() RETURNS int LANGUAGE plpgsql AS $$
                BEGIN
                    IF nextval('attempts') = 1 THEN RAISE EXCEPTION 'first attempt' USING ERRCODE = '40P01'; END IF;
                    RETURN 1;
                END $$
                """
            )
            try await db.client.transaction(["INSERT INTO notes VALUES (1)", "SELECT flaky()"])
            #expect(try await db.client.query("SELECT last_value FROM attempts").first?.decode(Int.self) == 2)
            #expect(try await db.client.query("SELECT count(*) FROM notes").first?.decode(Int.self) == 1)

            // The table changes shape under a prepared statement: the whole transaction runs again.
            #expect(try await db.client.transaction(["INSERT INTO notes VALUES (2)", "SELECT * FROM notes ORDER BY id"])[1].columnNames == ["id"])
            try await db.client.query("ALTER TABLE notes ADD COLUMN body text")
            let results = try await db.client.transaction(["INSERT INTO notes VALUES (3)", "SELECT * FROM notes ORDER BY id"])
            #expect(results[1].columnNames == ["id", "body"])
            #expect(try results[1].map { try $0.decode(Int.self) } == [1, 2, 3])
        }
    }

    @Test func aSentTransactionWhoseBackendDiesFailsAsALostConnectionAndTheNextGetsAFreshOne() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 1) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE notes (id int PRIMARY KEY)")
            let error = try await #require(throws: PostgresError.self) {
                try await db.client.transaction([
                    "INSERT INTO notes VALUES (1)",
                    "SELECT pg_terminate_backend(pg_backend_pid())",
                    "INSERT INTO notes VALUES (2)",
                ])
            }
            #expect(error.code == .connectionLost)
            // Nothing was committed, and the pool's one connection is replaced.
            #expect(try await db.client.query("SELECT count(*) FROM notes").first?.decode(Int.self) == 0)
            try await db.client.transaction(["INSERT INTO notes VALUES (3)"])
            #expect(try await db.client.query("SELECT id FROM notes").first?.decode(Int.self) == 3)
        }
    }
}
