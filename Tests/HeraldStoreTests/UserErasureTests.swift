import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres
import Testing

/// Serialized: the first test holds a transaction open on purpose, and every erasure in the cluster
/// waits for it.
@Suite("User erasure", .serialized)
struct UserErasureTests {
    /// Runs batches until the job finishes, for at most 30 s (transactions of tests running beside
    /// this one, anywhere in the cluster, hold it open until they end); returns the rows removed.
    func finish(_ erasures: UserErasureStore, grace: Duration) async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(30)
        var removed = 0
        while ContinuousClock.now < deadline {
            let progress = try #require(try await erasures.eraseNextBatch(size: 10, grace: grace))
            removed += progress.removedRows
            if progress.finished { return removed }
            try await Task.sleep(for: .milliseconds(5))
        }
        Issue.record("the erasure did not finish")
        return removed
    }

    /// A transaction that had written when the erasure committed — a fan-out batch, a send — may
    /// still add a row for the user's key: the job does not finish while it runs, and its row is
    /// removed once it commits.
    @Test func anErasureFinishesOnlyAfterTransactionsBesideItEndedAndTakesTheirRows() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
            let key = try #require(try await UserStore(client: db.client).key("u1"))
            let (opened, openedSignal) = AsyncStream<Void>.makeStream()
            let (release, releaseSignal) = AsyncStream<Void>.makeStream()
            // Never leaves the transaction open, even when an expectation below fails.
            defer { releaseSignal.finish() }
            let beside = Task {
                try await db.client.withTransaction { connection in
                    // Has an id before the erasure commits; writes the user's row after it.
                    try await connection.query("SELECT pg_current_xact_id()")
                    openedSignal.yield()
                    for await _ in release { break }
                    try await connection.query(
                        "INSERT INTO channel_states (user_key, channel_key, unread_adjustment) VALUES (\(key), 1, 1)"
                    )
                }
            }
            for await _ in opened { break }
            let erasures = UserErasureStore(client: db.client)
            let started = try #require(try await erasures.start(userID: "u1"))
            #expect(started.state == .running)
            #expect(try await UserStore(client: db.client).key("u1") == nil)

            // Nothing to remove yet, but the transaction beside it is open: not done.
            for _ in 0..<3 {
                let progress = try #require(try await erasures.eraseNextBatch(size: 10, grace: .zero))
                #expect(!progress.finished)
            }
            releaseSignal.yield()
            try await beside.value
            #expect(try await finish(erasures, grace: .zero) == 1)
            #expect(try await db.client.query("SELECT count(*) FROM channel_states WHERE user_key = \(key)")[0].decode(Int.self) == 0)
            #expect(try await erasures.status(userID: "u1")?.state == .done)
            #expect(try await erasures.eraseNextBatch(size: 10, grace: .zero) == nil)
        }
    }

    /// The grace time holds the job open for a request that authenticated just before the erasure.
    @Test func anErasureWaitsOutItsGraceTime() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
            let erasures = UserErasureStore(client: db.client)
            _ = try await erasures.start(userID: "u1")
            let progress = try #require(try await erasures.eraseNextBatch(size: 10, grace: .seconds(3600)))
            #expect(!progress.finished)
            try await db.client.query("UPDATE user_erasures SET requested_at = requested_at - interval '2 hours'")
            #expect(try await finish(erasures, grace: .seconds(3600)) == 0)
            // Records older than their retention go.
            #expect(try await erasures.deleteOldRecords(olderThan: .seconds(3600)) == 0)
            try await db.client.query("UPDATE user_erasures SET finished_at = finished_at - interval '2 hours'")
            #expect(try await erasures.deleteOldRecords(olderThan: .seconds(3600)) == 1)
            #expect(try await erasures.status(userID: "u1") == nil)
        }
    }
}
