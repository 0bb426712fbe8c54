import Foundation
import HeraldTesting
import Postgres
import Synchronization
import Testing

@Suite("Connection pool")
struct PoolTests {
    @Test func fiftyTasksShareFourConnections() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let applicationName = "pool-test-\(UUID().uuidString.prefix(8))"
            let client = PostgresClient(configuration: .init(conninfo: db.conninfo, maximumConnections: 4, applicationName: applicationName))
            let result = try await withThrowingTaskGroup(of: (Int32, Int).self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        try await client.withConnection { connection in
                            // Each lease holds its connection a little while, so leases overlap and queue.
                            let row = try #require(
                                try await connection.query(
                                    """
                                    SELECT pg_backend_pid(), (SELECT count(*) FROM pg_stat_activity WHERE application_name = \(applicationName))::int8
                                    FROM pg_sleep(0.01)
                                    """
                                ).first
                            )
                            return try row.decode((Int32, Int).self)
                        }
                    }
                }
                var pids = Set<Int32>()
                var mostOpen = 0
                var finished = 0
                for try await (pid, open) in group {
                    pids.insert(pid)
                    mostOpen = max(mostOpen, open)
                    finished += 1
                }
                return (pids, mostOpen, finished)
            }
            #expect(result.2 == 50)
            #expect(result.0.count <= 4)
            #expect(result.1 <= 4)
            #expect(result.1 >= 2, "leases should have overlapped")
            await client.shutdown()
            // After shutdown every connection is closed; the server reaps the backends on its own time,
            // so wait (bounded) for them to disappear.
            let remaining = try await withTimeout(.seconds(10), what: "the pool's backends to exit") {
                while true {
                    let row = try #require(
                        try await db.client.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = \(applicationName)").first
                    )
                    let count = try row.decode(Int.self)
                    if count == 0 { return count }
                    await Task.yield()
                }
            }
            #expect(remaining == 0)
        }
    }

    /// A statement past the pool's timeout is cancelled by the server and its connection serves the
    /// next one; a transaction may lift the timeout for itself only.
    @Test func statementsPastTheTimeoutAreCancelledAndTheConnectionGoesOn() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let client = PostgresClient(configuration: .init(conninfo: db.conninfo, maximumConnections: 1, statementTimeout: .milliseconds(200)))
            defer { Task { await client.shutdown() } }
            let error = try await #require(throws: PostgresError.self) { try await client.query("SELECT pg_sleep(20)") }
            #expect(error.code == .queryCanceled)
            #expect(error.sqlState == "57014")
            #expect(try await client.query("SELECT 1")[0].decode(Int.self) == 1)
            let lifted = try await client.withTransaction { connection in
                try await connection.query("SET LOCAL statement_timeout = 0")
                return try await connection.query("SELECT true FROM pg_sleep(0.4)")[0].decode(Bool.self)
            }
            #expect(lifted)
            #expect(try await client.query("SHOW statement_timeout")[0].decode(String.self) == "200ms")
            // Without a timeout the server's own applies.
            let plain = PostgresClient(configuration: .init(conninfo: db.conninfo, maximumConnections: 1))
            defer { Task { await plain.shutdown() } }
            #expect(try await plain.query("SHOW statement_timeout")[0].decode(String.self) == "0")
        }
    }

    /// The pool's connections never JIT-compile: a prepared statement's generic plan over large tables
    /// can be estimated above `jit_above_cost` and would be compiled on every execution.
    @Test func connectionsRunWithoutJIT() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            for timeout: Duration? in [nil, .seconds(5)] {
                let client = PostgresClient(configuration: .init(conninfo: db.conninfo, maximumConnections: 1, statementTimeout: timeout))
                defer { Task { await client.shutdown() } }
                #expect(try await client.query("SHOW jit")[0].decode(String.self) == "off")
                #expect(try await client.query("SHOW statement_timeout")[0].decode(String.self) == (timeout == nil ? "0" : "5s"))
            }
        }
    }

    @Test func leasesAfterShutdownFail() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let client = PostgresClient(configuration: .init(conninfo: db.conninfo, maximumConnections: 1))
            #expect(try await client.query("SELECT 1").first?.decode(Int32.self) == 1)
            await client.shutdown()
            let error = try await #require(throws: PostgresError.self) { try await client.query("SELECT 1") }
            #expect(error.code == .clientClosed)
        }
    }

    @Test func cancelledWaiterLeavesTheQueue() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let client = PostgresClient(configuration: .init(conninfo: db.conninfo, maximumConnections: 1))
            let (held, release) = AsyncStream.makeStream(of: Void.self)
            let (leased, leasedSignal) = AsyncStream.makeStream(of: Void.self)
            let holder = Task {
                try await client.withConnection { _ in
                    leasedSignal.yield()
                    for await _ in held { break }
                }
            }
            for await _ in leased { break }
            let waiter = Task { try await client.query("SELECT 1") }
            waiter.cancel()
            await #expect(throws: CancellationError.self) { try await waiter.value }
            release.yield()
            try await holder.value
            // The slot is usable again, so the cancelled waiter did not swallow it.
            #expect(try await client.query("SELECT 2").first?.decode(Int32.self) == 2)
            await client.shutdown()
        }
    }
}

@Suite("Database restart")
struct RestartTests {
    @Test func queryAfterServerRestartSucceeds() async throws {
        try await TestPostgres.withPrivateCluster { cluster in
            let client = PostgresClient(configuration: .init(conninfo: cluster.conninfo(), maximumConnections: 2))
            let before = try #require(try await client.query("SELECT pg_backend_pid()").first).decode(Int32.self)
            try await cluster.restart()
            // The pooled connection died with the old server; the pool notices and reconnects.
            let after = try #require(try await client.query("SELECT pg_backend_pid()").first).decode(Int32.self)
            #expect(before != after)
            #expect(try await client.query("SELECT 41 + 1").first?.decode(Int32.self) == 42)
            await client.shutdown()
        }
    }
}
