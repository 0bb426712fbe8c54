import Foundation
import HeraldCore
import Postgres

/// Erasing users: everything Herald holds about one, removed for good (`sql/0017_erasure_and_retention.sql`).
///
/// `start` is one short transaction: it removes the user's row (their sessions, devices, queued alert
/// pushes, push preferences and topic subscriptions follow by cascade), their presence, and closes their streams. Their
/// other rows — a user may have a million copies — are keyed by the user's internal key, which no
/// other user will ever carry, and `eraseNextBatch` removes them a bounded batch per transaction,
/// locking only that user's rows, so other users' requests never wait on an erasure. The job's state
/// is in the database: replicas share the work (`SKIP LOCKED`), and a restart resumes it.
public struct UserErasureStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// How long a finished erasure's record (the user id, the times) is kept for its status route.
    public static let recordRetention: Duration = .seconds(30 * 24 * 3600)

    /// Starts erasing the user. Returns the erasure, or — when there is no such user — the user id's
    /// latest erasure (so a repeated request answers the same job), or `nil` when there is neither.
    public func start(userID: String) async throws -> UserErasure? {
        try await client.withRetryingTransaction { connection in
            guard let key = try await connection.query("SELECT key FROM users WHERE id = \(userID) FOR UPDATE").first?.decode(Int64.self) else {
                return try await Self.latest(userID: userID, on: connection)
            }
            let removed = try await connection.query(
                """
                WITH presence AS (
                    DELETE FROM stream_connections WHERE user_key = \(key) RETURNING 1
                ), sessions AS (
                    SELECT count(*) AS n FROM sessions WHERE user_id = \(userID)
                ), devices AS (
                    SELECT count(*) AS n FROM devices WHERE user_key = \(key)
                ), preferences AS (
                    SELECT (SELECT count(*) FROM push_preferences WHERE user_key = \(key))
                        + (SELECT count(*) FROM channel_push_preferences WHERE user_key = \(key))
                        + (SELECT count(*) FROM category_preferences WHERE user_key = \(key)) AS n
                ), subscriptions AS (
                    SELECT count(*) AS n FROM topic_subscriptions WHERE user_key = \(key)
                )
                SELECT 1 + (SELECT count(*) FROM presence) + sessions.n + devices.n + preferences.n + subscriptions.n
                FROM sessions, devices, preferences, subscriptions
                """
            )[0].decode(Int64.self)
            try await connection.query("DELETE FROM users WHERE key = \(key)")
            try await Self.removeFromScheduledSends(userID: userID, on: connection)
            let row = try await connection.query(
                """
                INSERT INTO user_erasures (user_id, user_key, removed_rows) VALUES (\(userID), \(key), \(removed))
                RETURNING \(Self.columns)
                """
            )[0]
            // Streams opened with the user's sessions close (every process's hub hears of it).
            try await LiveHint.sessionsRevoked(userKey: key).send(on: connection)
            return try Self.decode(row)
        }
    }

    /// The user id's latest erasure, `nil` when it was never erased (or the record has expired).
    public func status(userID: String) async throws -> UserErasure? {
        try await client.withConnection { connection in
            try await Self.latest(userID: userID, on: connection)
        }
    }

    /// Removes up to `size` more rows of the least recently swept erasure that no other worker holds, in one
    /// transaction; `nil` when no erasure is waiting.
    ///
    /// An erasure finishes with a batch that removed nothing, provided that batch began once it was
    /// settled: every transaction that had an id when the erasure committed has ended (a fan-out or
    /// folding batch, a send in flight may have written a row for the user's key, and only a statement
    /// that starts after it ended is sure to see that row), and `grace` has passed since the erasure,
    /// for a request that authenticated just before it and writes its user's state after it. The first
    /// batch of a job records its own transaction id as the bound: it began after the erasure
    /// committed, so every such transaction has a lower id. (The snapshot's `xmax` cannot serve: it
    /// is one past the latest *completed* transaction, and a running one above that is not listed.)
    public func eraseNextBatch(size: Int, grace: Duration = .seconds(60)) async throws -> ErasureProgress? {
        precondition(size > 0, "a batch removes at least one row")
        return try await client.withRetryingTransaction { connection in
            guard
                let job = try await connection.query(
                    """
                    SELECT id, user_id, user_key,
                        coalesce(pg_snapshot_xmin(pg_current_snapshot())::text::bigint >= erase_horizon, false)
                            AND now() >= requested_at + \(TimeSQL.interval(grace))::interval AS settled
                    FROM user_erasures WHERE finished_at IS NULL ORDER BY swept_at NULLS FIRST, id LIMIT 1 FOR UPDATE SKIP LOCKED
                    """
                ).first
            else { return nil }
            let (id, userID, key, settled) = try job.decode((Int64, String, Int64, Bool).self)
            var removed = 0
            for table in Self.sweep(userID: userID, key: key, erasure: id) where removed < size {
                removed += try await connection.query(
                    "DELETE FROM \(unescaped: table.name) WHERE ctid = ANY(ARRAY(SELECT ctid FROM \(unescaped: table.name) WHERE \(table.condition) LIMIT \(size - removed)))"
                ).affectedRows
            }
            let finished = settled && removed == 0
            try await connection.query(
                """
                UPDATE user_erasures SET removed_rows = removed_rows + \(removed), swept_at = now(),
                    erase_horizon = coalesce(erase_horizon, \(ChangePositionSQL.currentTransactionID)),
                    finished_at = CASE WHEN \(finished) THEN now() END
                WHERE id = \(id)
                """
            )
            if finished {
                try await connection.query(
                    """
                    SELECT herald_webhook_event('user.erased', jsonb_build_object('user_id', user_id,
                        'requested_at', \(TimeSQL.rfc3339("requested_at")), 'finished_at', \(TimeSQL.rfc3339("finished_at"))))
                    FROM user_erasures WHERE id = \(id)
                    """
                )
            }
            return ErasureProgress(userID: userID, userKey: key, removedRows: removed, finished: finished)
        }
    }

    /// Removes the records of erasures that finished longer ago than `recordRetention`; returns how many.
    @discardableResult
    public func deleteOldRecords(olderThan age: Duration = Self.recordRetention) async throws -> Int {
        try await client.query(
            "DELETE FROM user_erasures WHERE finished_at < now() - \(TimeSQL.interval(age))::interval"
        ).affectedRows
    }

    // MARK: - Private

    /// Takes the user out of every scheduled send that names them, waiting or finished (the stored
    /// request is all a schedule keeps of them; `SendRequestUsers` knows where ids are). A waiting
    /// send to listed users none of whom are left is cancelled, saying why. A worker making a part of
    /// one now holds its row (`ScheduleStore.fence`): this waits for that send, whose copy for the
    /// user the sweep then removes. The claim of a rewritten send ends, so that a worker that claimed
    /// it before sends nothing from the request it read (its fence compares the request) and the next
    /// round makes it as it now reads.
    static func removeFromScheduledSends(userID: String, on connection: PostgresConnection) async throws {
        let named = try await connection.query(
            """
            SELECT id, request, state FROM scheduled_sends WHERE \(try SendRequestUsers.names(userID, request: "request"))
            ORDER BY id FOR UPDATE
            """
        )
        for row in named {
            let (id, stored, state) = try row.decode((Int64, PostgresJSONB, String).self)
            let request = try JSONDecoder().decode(JSONValue.self, from: Data(stored.utf8))
            let rewritten = SendRequestUsers.removing(userID, from: request)
            guard case .object(let body) = rewritten, rewritten != request else { continue }
            let emptied = state == ScheduledSend.State.scheduled.rawValue && body["targets"] == .array([])
            try await connection.query(
                """
                UPDATE scheduled_sends SET request = \(try PostgresJSONB(utf8: Array(JSONEncoder().encode(rewritten)))), updated_at = now(),
                    claimed_until = NULL,
                    state = CASE WHEN \(emptied) THEN 'canceled' ELSE state END,
                    error = CASE WHEN \(emptied) THEN 'every user it was sent to was erased' ELSE error END
                WHERE id = \(id)
                """
            )
        }
    }

    /// The tables an erasure sweeps, in order, each with the condition that picks the user's rows.
    /// Copies come before channel states: a folding batch writes a state only for a user it finds, and
    /// the sweep must not leave one behind it. Idempotency records are taken only up to the erasure,
    /// so that a new user with the same id keeps theirs.
    private static func sweep(userID: String, key: Int64, erasure: Int64) -> [(name: String, condition: PostgresQuery)] {
        [
            ("notification_recipients", "user_key = \(key)"),
            ("notification_events", "user_key = \(key)"),
            ("channel_states", "user_key = \(key)"),
            ("channel_list_removals", "user_key = \(key)"),
            ("push_failures", "user_key = \(key)"),
            ("stream_connections", "user_key = \(key)"),
            (
                "idempotency_keys",
                "\(userID) = ANY(user_ids) AND created_at <= (SELECT requested_at FROM user_erasures WHERE id = \(erasure))"
            ),
        ]
    }

    static let columns: PostgresQuery = "user_id, finished_at IS NOT NULL, requested_at, finished_at, removed_rows"

    static func latest(userID: String, on connection: PostgresConnection) async throws -> UserErasure? {
        try await connection.query(
            "SELECT \(columns) FROM user_erasures WHERE user_id = \(userID) ORDER BY id DESC LIMIT 1"
        ).first.map(decode)
    }

    static func decode(_ row: PostgresRow) throws -> UserErasure {
        let (userID, done, requestedAt, finishedAt, removed) = try row.decode((String, Bool, Date, Date?, Int64).self)
        return UserErasure(userID: userID, state: done ? .done : .running, requestedAt: requestedAt, finishedAt: finishedAt, removedRows: removed)
    }
}
