import HeraldTesting
import Logging
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

            // DETAIL quotes the row's value: logs carry it only at debug level.
            #expect(error.detail?.contains("a@example.com") == true)
            #expect(!error.debugDescription.contains("a@example.com"))
            var logger = Logger(label: "test.errors")
            for level in [Logger.Level.info, .notice, .warning, .error] {
                logger.logLevel = level
                #expect(!"\(logger.describe(error))".contains("a@example.com"), "at \(level)")
                #expect("\(logger.describe(error))".contains("SQLSTATE 23505"))
            }
            for level in [Logger.Level.debug, .trace] {
                logger.logLevel = level
                #expect("\(logger.describe(error))".contains("DETAIL: Key (email)=(a@example.com) already exists."), "at \(level)")
            }
        }
    }

    @Test func connectionFailureIsConnectionLost() async throws {
        let client = PostgresClient(
            configuration: .init(conninfo: "host=/nonexistent-herald-socket-dir port=1 connect_timeout=2", maximumConnections: 1)
        )
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
            // Cancel once the statement is really executing on the server (sleeping, not being parsed).
            // This database's only: tests on other databases of the cluster may sleep too.
            while try await client.query(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = 'SELECT pg_sleep(30)' AND wait_event = 'PgSleep'"
            )
            .first?.decode(Int.self) == 0 {
                await Task.yield()
            }
            task.cancel()
            let error = try await #require(throws: PostgresError.self) { try await task.value }
            #expect(error.code == .queryCanceled)
            // The connection is still good for the next lease.
            #expect(try await client.query("SELECT 7").first?.decode(Int.self) == 7)
        }
    }

    @Test func aCancelledTaskSendsNoFurtherStatements() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let client = db.client
            try await client.query("CREATE TABLE marks (n int)")
            let (started, startedSignal) = AsyncStream.makeStream(of: Void.self)
            let (proceed, proceedSignal) = AsyncStream.makeStream(of: Void.self)
            let task = Task {
                try await client.withConnection { connection in
                    try await connection.query("INSERT INTO marks VALUES (1)")
                    startedSignal.yield()
                    for await _ in proceed { break }
                    try await connection.query("INSERT INTO marks VALUES (2)")
                }
            }
            for await _ in started { break }
            task.cancel()
            proceedSignal.yield()
            await #expect(throws: CancellationError.self) { try await task.value }
            let rows = try await client.query("SELECT n FROM marks")
            #expect(try rows.map { try $0.decode(Int32.self) } == [1])
        }
    }
}

@Suite("Prepared statements")
struct PreparedStatementTests {
    @Test func statementsArePreparedOncePerConnection() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 1) { (db: TestDatabase) async throws in
            for value in 1...3 {
                #expect(try await db.client.query("SELECT \(value) + 1").first?.decode(Int.self) == value + 1)
            }
            // Same text and parameter types: one prepared statement on the session, reused.
            let prepared = try await db.client.query("SELECT count(*) FROM pg_prepared_statements WHERE statement = 'SELECT $1 + 1'")
            #expect(try prepared.first?.decode(Int.self) == 1)
        }
    }

    @Test func statementIsPreparedAgainAfterTheTableChangesShape() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 1) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE shapes (a int)")
            try await db.client.query("INSERT INTO shapes VALUES (1)")
            #expect(try await db.client.query("SELECT * FROM shapes").columnNames == ["a"])
            try await db.client.query("ALTER TABLE shapes ADD COLUMN b int")
            // The server refuses the stale plan; outside a transaction the connection re-prepares and
            // retries, so the caller never sees it.
            #expect(try await db.client.query("SELECT * FROM shapes").columnNames == ["a", "b"])
            // Inside a transaction a retry is impossible (the transaction is aborted): the error surfaces,
            // and the statement is prepared afresh for the next attempt.
            try await db.client.query("ALTER TABLE shapes ADD COLUMN c int")
            let stale = try await #require(throws: PostgresError.self) {
                try await db.client.withTransaction { connection in try await connection.query("SELECT * FROM shapes") }
            }
            #expect(stale.sqlState == "0A000")
            #expect(try await db.client.query("SELECT * FROM shapes").columnNames == ["a", "b", "c"])
        }
    }
}
