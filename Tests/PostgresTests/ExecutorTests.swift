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

    /// The threads carry their names (`herald-pg-N`) where `top` and `perf` look for them.
    @Test func threadsAreNamed() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 2) { (db: TestDatabase) async throws in
            let name = try await db.client.executor.run {
                (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            }
            #expect(name.hasPrefix("herald-pg-"))
        }
    }
}
