import Foundation
import HeraldTesting
import Postgres
import Synchronization
import Testing

@Suite("Executor")
struct ExecutorTests {
    @Test func tasksOnTheExecutorRunStatementsInPlace() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 2) { (db: TestDatabase) async throws in
            let client = db.client
            #expect(!client.executor.isCurrentThread)
            let onPoolThread = try await withTaskExecutorPreference(client.executor) {
                let value = try await client.query("SELECT 5").first?.decode(Int32.self)
                return (client.executor.isCurrentThread, value)
            }
            #expect(onPoolThread.0)
            #expect(onPoolThread.1 == 5)
        }
    }

    /// Every task on the executor, transactions contending for one row lock, more tasks than threads:
    /// a task holding the lock must always find a thread to commit on.
    @Test func contendedTransactionsOnTheExecutorDoNotDeadlock() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 2) { (db: TestDatabase) async throws in
            let client = db.client
            try await client.query("CREATE TABLE tally (id int PRIMARY KEY, n int NOT NULL)")
            try await client.query("INSERT INTO tally VALUES (1, 0)")
            try await withTimeout(.seconds(60), what: "contending transactions") {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<20 {
                        group.addTask(executorPreference: client.executor) {
                            try await client.withTransaction { connection in
                                try await connection.query("UPDATE tally SET n = n + 1 WHERE id = 1")
                                await Task.yield()
                                try await connection.query("SELECT pg_sleep(0.002)")
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            #expect(try await client.query("SELECT n FROM tally").first?.decode(Int32.self) == 20)
        }
    }

    /// With every connection blocked inside libpq, work that needs no connection still runs on the
    /// executor (its spare threads), and the threads carry their names for `top` and `perf`.
    @Test func spareThreadsRunWhileEveryConnectionIsBlocked() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 2) { (db: TestDatabase) async throws in
            let client = db.client
            let waitingCount: PostgresQuery =
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            let other = PostgresClient(configuration: .init(conninfo: db.conninfo, maximumConnections: 1))
            try await other.withConnection { holder in
                try await holder.query("SELECT pg_advisory_lock(42)")
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<2 {
                        // The lock timeout (for this statement only) frees the threads should the
                        // executor have none to spare, so that a failure does not hang the run.
                        group.addTask {
                            try await client.query("SELECT set_config('lock_timeout', '30s', true), pg_advisory_lock_shared(42)")
                        }
                    }
                    // Both pool connections are now waiting on the lock, each on an executor thread.
                    try await withTimeout(.seconds(60), what: "both pool connections to wait on the lock") {
                        while try await holder.query(waitingCount).first!.decode(Int64.self) < 2 {
                            await Task.yield()
                        }
                    }
                    let name = try await client.executor.run {
                        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                    }
                    // It ran while both connections were still blocked, not after the lock timeout.
                    #expect(try await holder.query(waitingCount).first!.decode(Int64.self) == 2)
                    #expect(name.hasPrefix("herald-pg-"))
                    try await holder.query("SELECT pg_advisory_unlock(42)")
                    try await group.waitForAll()
                }
            }
            await other.shutdown()
        }
    }
}
