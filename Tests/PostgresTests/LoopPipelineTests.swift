import Foundation
import HeraldTesting
import NIOCore
import NIOPosix
import Testing

@testable import Postgres

/// Pipelined statements sent from event loops with connections of their own, answered on the loop.
/// The loops are NIO's shared ones, which other tests' servers use at the same time: the pipelines of
/// several clients share each loop's signals, as in a server with a read standby.
#if os(Linux)
@Suite("Event-loop pipelines")
struct LoopPipelineTests {
    /// Runs `body` as a task whose jobs run on `loop`, as an HTTP connection's task does.
    private func onLoop<R: Sendable>(_ loop: any EventLoop, _ body: @escaping @Sendable () async throws -> R) async throws -> R {
        try await Task(executorPreference: EventLoopExecutor(loop: loop)) { try await body() }.value
    }

    /// A client whose two loops have pipelines, with `body` given one of the loops once its pipeline
    /// has answered a first statement (until then, statements take the pool's way).
    private func withLoopClient(
        _ db: TestDatabase,
        _ body: (PostgresClient, any EventLoop) async throws -> Void
    ) async throws {
        let client = PostgresClient(configuration: .init(conninfo: db.conninfo, maximumConnections: 4, applicationName: "loop-pipeline-test"))
        do {
            let group = MultiThreadedEventLoopGroup.singleton
            let started = await client.startEventLoopPipelines(on: group)
            #expect(started == min(2, System.coreCount))
            let loop = group.next()
            try await withTimeout(.seconds(10), what: "the loop's pipeline answering") {
                while await client.eventLoopPipelineCallers == 0 {
                    _ = try await onLoop(loop) { try await client.pipelinedQuery("SELECT 1") }
                }
            }
            try await body(client, loop)
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
    }

    @Test func concurrentCallersOnALoopGetTheirOwnAnswersOnTheLoopFromOneConnection() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await withLoopClient(db) { client, loop in
                let before = await client.eventLoopPipelineCallers
                let answers = try await onLoop(loop) {
                    try await withThrowingTaskGroup(of: (Int, Int, Int32, Bool).self) { group in
                        for n in 1...200 {
                            group.addTask(executorPreference: EventLoopExecutor(loop: loop)) {
                                let outcomes = try await client.pipelinedQueries(["SELECT \(n)::int", "SELECT pg_backend_pid()"])
                                let value = try #require(try outcomes[0].get().first).decode(Int.self)
                                let pid = try #require(try outcomes[1].get().first).decode(Int32.self)
                                return (n, value, pid, loop.inEventLoop)
                            }
                        }
                        return try await group.reduce(into: []) { $0.append($1) }
                    }
                }
                #expect(answers.count == 200)
                #expect(answers.allSatisfy { $0.0 == $0.1 })
                #expect(answers.allSatisfy { $0.3 }, "every caller went on on the loop")
                #expect(Set(answers.map(\.2)).count == 1, "one connection answered them all")
                #expect(await client.eventLoopPipelineCallers - before == 200)
            }
        }
    }

    @Test func aFailingStatementFailsAloneAndTheOthersOfItsGroupRunAgain() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE marks (n int PRIMARY KEY)")
            try await withLoopClient(db) { client, loop in
                let outcomes = try await onLoop(loop) {
                    try await client.pipelinedQueries([
                        "INSERT INTO marks VALUES (1) RETURNING n",
                        "SELECT 1 / 0",
                        "INSERT INTO marks VALUES (3) RETURNING n",
                    ])
                }
                #expect(try outcomes[0].get().first?.decode(Int.self) == 1)
                #expect(throws: PostgresError.self) { try outcomes[1].get() }
                if case .failure(let error) = outcomes[1] { #expect(error.sqlState == "22012") }
                #expect(try outcomes[2].get().first?.decode(Int.self) == 3)
                // Both writes stand once each: the server rolled the first back with the failure, and
                // it ran again on its own.
                let rows = try await db.client.query("SELECT n FROM marks ORDER BY n").map { try $0.decode(Int.self) }
                #expect(rows == [1, 3])
                // The connection goes on serving.
                let after = try await onLoop(loop) { try await client.pipelinedQuery("SELECT 42") }
                #expect(try after.first?.decode(Int.self) == 42)
            }
        }
    }

    @Test func aLostConnectionFailsItsCallersAndLaterOnesGetAFreshOne() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await withLoopClient(db) { client, loop in
                let pid = try #require(try await onLoop(loop) { try await client.pipelinedQuery("SELECT pg_backend_pid()") }.first).decode(Int32.self)
                let sleeper = Task { try await onLoop(loop) { try await client.pipelinedQueries(["SELECT pg_sleep(30)"]) } }
                try await withTimeout(.seconds(10), what: "the sleeper running") {
                    while try await db.client.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(pid) AND query LIKE '%pg_sleep%'").first?
                        .decode(Int.self) != 1
                    {
                        await Task.yield()
                    }
                }
                try await db.client.query("SELECT pg_terminate_backend(\(pid))")
                let outcome = try await sleeper.value[0]
                guard case .failure(let error) = outcome else {
                    Issue.record("the statement of a terminated backend succeeded")
                    return
                }
                #expect(error.code == .connectionLost)
                // Later statements are answered at once (on the pool meanwhile), then by a new
                // connection of the loop's.
                try await withTimeout(.seconds(10), what: "a fresh connection on the loop") {
                    while true {
                        let before = await client.eventLoopPipelineCallers
                        let answer = try await onLoop(loop) { try await client.pipelinedQuery("SELECT pg_backend_pid()") }
                        let served = try #require(answer.first).decode(Int32.self)
                        if await client.eventLoopPipelineCallers > before {
                            #expect(served != pid)
                            return
                        }
                    }
                }
            }
        }
    }

    @Test func aStatementLargerThanTheSocketsBuffersGoesOut() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await withLoopClient(db) { client, loop in
                let text = String(repeating: "x", count: 16 << 20)
                let answer = try await onLoop(loop) { try await client.pipelinedQuery("SELECT length(\(text))") }
                #expect(try answer.first?.decode(Int.self) == 16 << 20)
            }
        }
    }

    @Test func aStatementWhosePlanWentStaleIsPreparedAgain() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE shapes (a int)")
            try await db.client.query("INSERT INTO shapes VALUES (1)")
            try await withLoopClient(db) { client, loop in
                let first = try await onLoop(loop) { try await client.pipelinedQuery("SELECT * FROM shapes") }
                #expect(first.columnCount == 1)
                try await db.client.query("ALTER TABLE shapes ADD COLUMN b int DEFAULT 2")
                let second = try await onLoop(loop) { try await client.pipelinedQuery("SELECT * FROM shapes") }
                #expect(second.columnCount == 2)
                let row = try #require(second.first).decode((Int, Int).self)
                #expect(row == (1, 2))
            }
        }
    }

    @Test func shutdownGivesTheLoopsConnectionsBack() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            var client: PostgresClient?
            try await withLoopClient(db) { loopClient, _ in client = loopClient }
            // `withLoopClient` has shut the client down (so `shutdown` did not wait for ever on the
            // loops' leases), and every connection of it ends on the server.
            #expect(client != nil)
            try await withTimeout(.seconds(10), what: "the client's connections ending") {
                while try await db.client.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'loop-pipeline-test'").first?.decode(
                    Int.self
                ) != 0 {
                    await Task.yield()
                }
            }
        }
    }
}
#endif
