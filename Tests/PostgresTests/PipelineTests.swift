import Foundation
import HeraldTesting
import Testing

@testable import Postgres

@Suite("Pipelined statements")
struct PipelineTests {
    /// Runs `body` with a connection of the test's own for holding advisory locks, and a client with
    /// one pipeline connection; whatever happens in `body`, the locks are let go (so no statement stays
    /// blocked on them) and the client is shut down.
    private func withLockHolder(
        _ db: TestDatabase,
        _ body: (PostgresConnection, PostgresClient) async throws -> Void
    ) async throws {
        let client = PostgresClient(configuration: .init(conninfo: db.conninfo, maximumConnections: 2, pipelineConnections: 1))
        do {
            try await db.client.withConnection { holder in
                // Session locks outlive the lease: let them go before the connection goes back.
                do {
                    try await body(holder, client)
                    try await holder.query("SELECT pg_advisory_unlock_all()")
                } catch {
                    _ = try? await holder.query("SELECT pg_advisory_unlock_all()")
                    throw error
                }
            }
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
    }

    /// Makes the pipeline's one connection busy with a statement waiting on advisory lock `key`, held
    /// by `holder`; returns that statement's task once the server shows it waiting.
    private func occupyThePipeline(
        _ client: PostgresClient,
        lockedBy holder: PostgresConnection,
        key: Int,
        db: TestDatabase
    ) async throws -> Task<PostgresResult, any Error> {
        try await holder.query("SELECT pg_advisory_lock(\(key))")
        let blocked = Task { try await client.pipelinedQuery("SELECT pg_advisory_xact_lock(\(key))") }
        try await untilWaitingOnAdvisoryLocks(1, db: db)
        return blocked
    }

    private func untilWaitingOnAdvisoryLocks(_ count: Int, db: TestDatabase) async throws {
        try await withTimeout(.seconds(10), what: "\(count) statement(s) waiting for an advisory lock") {
            while try await db.client.query(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
            ).first?.decode(Int.self) != count {
                await Task.yield()
            }
        }
    }

    private func untilQueued(_ count: Int, in client: PostgresClient) async throws {
        try await withTimeout(.seconds(10), what: "\(count) statements queued for the pipeline") {
            while client.batchCounts.waiting != count { await Task.yield() }
        }
    }

    @Test func statementsQueuedBehindABusyConnectionShareOneRoundTripAndKeepTheirOwnOutcomes() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE marks (n int PRIMARY KEY)")
            try await withLockHolder(db) { holder, client in
                let blocked = try await occupyThePipeline(client, lockedBy: holder, key: 7, db: db)
                // Ten statements queue behind it: writes, reads, and one that fails in the middle.
                let queued = (1...10).map { n in
                    Task { () -> Result<(Int, Int32), PostgresError> in
                        do {
                            let sql: PostgresQuery =
                                n == 5
                                ? "INSERT INTO marks VALUES (1 / (\(n) - 5)) RETURNING n, pg_backend_pid()"
                                : "INSERT INTO marks VALUES (\(n)) RETURNING n, pg_backend_pid()"
                            return .success(try #require(try await client.pipelinedQuery(sql).first).decode((Int, Int32).self))
                        } catch let error as PostgresError {
                            return .failure(error)
                        }
                    }
                }
                try await untilQueued(10, in: client)
                try await holder.query("SELECT pg_advisory_unlock(7)")
                _ = try await blocked.value
                var backends = Set<Int32>()
                for (index, task) in queued.enumerated() {
                    let n = index + 1
                    switch try await task.value {
                    case .success(let (value, backend)):
                        #expect(n != 5 && value == n)
                        backends.insert(backend)
                    case .failure(let error):
                        #expect(n == 5 && error.sqlState == "22012", "statement \(n): \(error)")
                    }
                }
                // The failure took nothing else with it: each statement was its own transaction.
                let rows = try await db.client.query("SELECT n FROM marks ORDER BY n")
                #expect(try rows.map { try $0.decode(Int.self) } == [1, 2, 3, 4, 6, 7, 8, 9, 10])
                // All on the pipeline's one connection, in batches (at most 16 to a round trip).
                #expect(backends.count == 1)
                #expect(client.batchCounts.roundTripsShared >= 1)
            }
        }
    }

    @Test func aStatementAloneRunsInItsCallersTaskAndItsErrorsAreThoseOfQuery() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let client = PostgresClient(configuration: .init(conninfo: db.conninfo, maximumConnections: 1, pipelineConnections: 1))
            #expect(try await client.pipelinedQuery("SELECT \(41) + 1").first?.decode(Int.self) == 42)
            let error = try await #require(throws: PostgresError.self) { try await client.pipelinedQuery("SELECT 1 / 0") }
            #expect(error.sqlState == "22012")
            #expect(try await client.pipelinedQuery("SELECT 'still fine'").first?.decode(String.self) == "still fine")
            #expect(client.batchCounts.roundTripsShared == 0)
            #expect(client.batchCounts.drainers == 0)
            await client.shutdown()
        }
    }

    @Test func aCallersStatementsTravelTogetherEachWithItsOwnOutcome() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE marks (n int PRIMARY KEY)")
            func expectDivisionByZero(_ outcome: Result<PostgresResult, PostgresError>) {
                guard case .failure(let error) = outcome else {
                    Issue.record("the division by zero succeeded")
                    return
                }
                #expect(error.sqlState == "22012")
            }
            // Alone: the caller sends them itself, in one round trip. The failure in the middle takes
            // nothing with it, and the last statement sees what the first committed.
            let alone = db.client.batchCounts.roundTripsShared
            let outcomes = try await db.client.pipelinedQueries([
                "INSERT INTO marks VALUES (1)", "SELECT 1 / 0", "SELECT count(*)::int FROM marks",
            ])
            #expect(outcomes.count == 3)
            #expect(try outcomes[0].get().affectedRows == 1)
            expectDivisionByZero(outcomes[1])
            #expect(try outcomes[2].get().first?.decode(Int.self) == 1)
            #expect(db.client.batchCounts.roundTripsShared == alone + 1)

            // Queued behind a busy connection: they still go out together, in the caller's order.
            try await withLockHolder(db) { holder, client in
                let blocked = try await occupyThePipeline(client, lockedBy: holder, key: 11, db: db)
                let pair = Task { try await client.pipelinedQueries(["SELECT 1 / 0", "INSERT INTO marks VALUES (2) RETURNING n"]) }
                try await untilQueued(1, in: client)
                try await holder.query("SELECT pg_advisory_unlock(11)")
                _ = try await blocked.value
                let outcomes = try await pair.value
                #expect(outcomes.count == 2)
                expectDivisionByZero(outcomes[0])
                #expect(try outcomes[1].get().first?.decode(Int.self) == 2)
                #expect(client.batchCounts.roundTripsShared == 1)
            }
        }
    }

    /// A caller's statements go behind one sync point (one send and one answer, where a sync point
    /// per statement costs a send and an answer per statement): together they were one transaction.
    /// After a failure the others ran again apart. Different callers' statements in one round trip
    /// keep transactions of their own.
    @Test func aCallersStatementsShareOneSyncPointAndOtherCallersKeepTheirOwn() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let transaction: PostgresQuery = "SELECT pg_current_xact_id()::text"
            let together = try await db.client.pipelinedQueries([transaction, transaction]).map { try $0.get().first?.decode(String.self) }
            #expect(together[0] != nil && together[0] == together[1])

            let apart = try await db.client.pipelinedQueries([transaction, "SELECT 1 / 0", transaction])
            let first = try apart[0].get().first?.decode(String.self)
            let last = try apart[2].get().first?.decode(String.self)
            #expect(first != nil && last != nil && first != last)
            #expect(throws: PostgresError.self) { try apart[1].get() }

            // Three callers queued behind a busy connection: one round trip, three transactions, and
            // each caller's pair still shares its own.
            try await withLockHolder(db) { holder, client in
                let blocked = try await occupyThePipeline(client, lockedBy: holder, key: 12, db: db)
                let callers = (1...3).map { _ in
                    Task { try await client.pipelinedQueries([transaction, transaction]).map { try $0.get().first?.decode(String.self) } }
                }
                try await untilQueued(3, in: client)
                try await holder.query("SELECT pg_advisory_unlock(12)")
                _ = try await blocked.value
                var seen = Set<String?>()
                for caller in callers {
                    let pair = try await caller.value
                    #expect(pair[0] != nil && pair[0] == pair[1])
                    seen.insert(pair[0])
                }
                #expect(seen.count == 3)
                #expect(client.batchCounts.roundTripsShared == 1)
            }
        }
    }

    @Test func cancellingAQueuedStatementWithdrawsIt() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE marks (n int)")
            try await withLockHolder(db) { holder, client in
                let blocked = try await occupyThePipeline(client, lockedBy: holder, key: 8, db: db)
                let withdrawn = Task { try await client.pipelinedQuery("INSERT INTO marks VALUES (1)") }
                let kept = Task { try await client.pipelinedQuery("INSERT INTO marks VALUES (2)") }
                try await untilQueued(2, in: client)
                withdrawn.cancel()
                await #expect(throws: CancellationError.self) { try await withdrawn.value }
                try await holder.query("SELECT pg_advisory_unlock(8)")
                _ = try await blocked.value
                _ = try await kept.value
            }
            let rows = try await db.client.query("SELECT n FROM marks")
            #expect(try rows.map { try $0.decode(Int32.self) } == [2])
        }
    }

    @Test func aConnectionLostUnderABatchFailsThatBatchAndTheNextStatementGetsAFreshOne() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await withLockHolder(db) { holder, client in
                // The first statement waits on lock 9; behind it queue a batch whose second caller
                // waits on lock 10, so that batch is in flight when its backend is terminated. The
                // callers queue one at a time, so that the batch keeps their order.
                try await holder.query("SELECT pg_advisory_lock(10)")
                let first = try await occupyThePipeline(client, lockedBy: holder, key: 9, db: db)
                let answered = Task { try await client.pipelinedQuery("SELECT 1") }
                try await untilQueued(1, in: client)
                var inFlight: [Task<PostgresResult, any Error>] = []
                for (index, sql) in ["SELECT pg_advisory_xact_lock(10)", "SELECT 2"].enumerated() {
                    inFlight.append(Task { try await client.pipelinedQuery(PostgresQuery(unsafeSQL: sql)) })
                    try await untilQueued(index + 2, in: client)
                }
                try await holder.query("SELECT pg_advisory_unlock(9)")
                _ = try await first.value
                try await untilWaitingOnAdvisoryLocks(1, db: db)
                try await db.client.query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
                )
                // The caller before the loss had its answer (its sync point came back): it stands.
                #expect(try await answered.value.first?.decode(Int.self) == 1)
                for task in inFlight {
                    let error = try await #require(throws: PostgresError.self) { try await task.value }
                    #expect(error.code == .connectionLost)
                }
                try await holder.query("SELECT pg_advisory_unlock(10)")
                #expect(try await client.pipelinedQuery("SELECT 3").first?.decode(Int.self) == 3)
            }
        }
    }

    @Test func statementsAfterShutdownFail() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let client = PostgresClient(configuration: .init(conninfo: db.conninfo, maximumConnections: 1))
            await client.shutdown()
            let error = try await #require(throws: PostgresError.self) { try await client.pipelinedQuery("SELECT 1") }
            #expect(error.code == .clientClosed)
            #expect(client.batchCounts.drainers == 0)
        }
    }
}
