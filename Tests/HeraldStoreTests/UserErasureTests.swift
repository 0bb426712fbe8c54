import Foundation
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
                // Finished however the transaction ends, so that a failing BEGIN fails the test below
                // instead of leaving it waiting for a signal that never comes.
                defer { openedSignal.finish() }
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
            var held = false
            for await _ in opened {
                held = true
                break
            }
            guard held else {
                try await beside.value
                throw HeraldProcessError(message: "the transaction beside the erasure ended before it held an id")
            }
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

    /// Scheduled sends keep their request, which names users: an erasure takes the user out of each,
    /// waiting or made, and cancels a waiting one that was only for users who are gone.
    @Test func anErasureTakesTheUserOutOfScheduledSends() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            for user in ["u1", "u2"] { _ = try await UserStore(client: db.client).upsert(id: user, nickname: nil, profileURL: nil) }
            let schedules = ScheduleStore(client: db.client)
            func schedule(_ request: String, audience: String = "targets") async throws -> Int64 {
                let outcome = try await schedules.create(
                    request: Array(request.utf8),
                    channelURL: "feed",
                    templateKey: "plain",
                    audience: audience,
                    timing: .at(Date() + 3600),
                    repeats: nil,
                    nextAt: Date() + 3600
                ) { _ in StoredResponse(status: 201, body: []) }
                guard case .created(let stored, _) = outcome else { throw CancellationError() }
                return stored.id
            }
            let both = try await schedule(
                #"{"targets": ["u1", "u2"], "variables": {"title": "hello"}, "user_variables": {"u1": {"title": "a"}, "u2": {"title": "b"}}, "push": {"force_push": ["u1"], "mentioned_user_ids": ["u2", "u1"]}}"#
            )
            let only = try await schedule(#"{"targets": ["u1"], "variables": {"title": "x"}}"#)
            let everyone = try await schedule(#"{"audience": "all", "exclude": ["u1", "u2"], "variables": {"title": "x"}}"#, audience: "all")
            let made = try await schedule(#"{"targets": ["u1"], "variables": {"title": "x"}}"#)
            try await db.client.query("UPDATE scheduled_sends SET state = 'sent' WHERE id = \(made)")
            let fromThem = try await schedule(#"{"targets": ["u2"], "variables": {"title": "x"}, "push": {"sender_id": "u1"}}"#)
            // A variable that merely reads like the id is not the user.
            let unrelated = try await schedule(#"{"targets": ["u2"], "variables": {"title": "u1"}}"#)

            _ = try await UserErasureStore(client: db.client).start(userID: "u1")
            func stored(_ id: Int64) async throws -> (request: JSONValue, state: ScheduledSend.State, error: String?) {
                let found = try #require(try await schedules.get(id))
                return (try JSONDecoder().decode(JSONValue.self, from: Data(found.request)), found.state, found.error)
            }
            let expected: JSONValue = .object([
                "targets": .array([.string("u2")]), "variables": .object(["title": .string("hello")]),
                "user_variables": .object(["u2": .object(["title": .string("b")])]),
                "push": .object(["force_push": .array([]), "mentioned_user_ids": .array([.string("u2")])]),
            ])
            let kept = try await stored(both)
            #expect(kept.request == expected && kept.state == .scheduled)
            let emptied = try await stored(only)
            #expect(emptied.request == .object(["targets": .array([]), "variables": .object(["title": .string("x")])]))
            #expect(emptied.state == .canceled && emptied.error == "every user it was sent to was erased")
            let broadcast = try await stored(everyone)
            #expect(
                broadcast.request
                    == .object(["audience": .string("all"), "exclude": .array([.string("u2")]), "variables": .object(["title": .string("x")])])
            )
            let sent = try await stored(made)
            #expect(sent.state == .sent && sent.request == .object(["targets": .array([]), "variables": .object(["title": .string("x")])]))
            let sender = try await stored(fromThem)
            #expect(
                sender.request
                    == .object(["targets": .array([.string("u2")]), "variables": .object(["title": .string("x")]), "push": .object([:])])
            )
            let untouched = try #require(try await schedules.get(unrelated))
            #expect(String(decoding: untouched.request, as: UTF8.self).contains("u1"))
            #expect(
                try await db.client.query("SELECT count(*) FROM scheduled_sends WHERE request::text LIKE '%\"u1\"%' AND id <> \(unrelated)")[0]
                    .decode(Int64.self) == 0
            )
        }
    }
}
