import Postgres

/// How far one `audience: "all"` fan-out has come after a batch.
public struct FanoutProgress: Sendable, Equatable {
    public var notificationID: Int64
    /// Recipient rows this batch inserted.
    public var inserted: Int
    public var finished: Bool
}

extension NotificationStore {
    /// Reaches the next batch of users for the oldest unfinished `audience: "all"` notification that no
    /// other worker holds, in one transaction: the recipient rows and the notification's progress commit
    /// together, so a crash between batches loses nothing and repeats nothing. `nil` when no fan-out
    /// is waiting.
    ///
    /// Each batch is its own short transaction on purpose: readers of the change streams wait for every
    /// transaction older than their horizon (see `sql/0005_notifications.sql`), so one transaction over
    /// 100,000 users would hold back every user's sync for its whole duration.
    public func fanOutNextBatch(size: Int) async throws -> FanoutProgress? {
        try await client.withTransaction { connection in
            guard let row = try await connection.query(
                """
                SELECT id, channel_key, fanout_after, fanout_through FROM notifications
                WHERE fanout_state = 'running' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
                """
            ).first else { return nil }
            let (id, channelKey, after, through) = try row.decode((Int64, Int64, Int64, Int64).self)
            let xid = try await Self.currentTransactionID(on: connection)
            // Users who already have a copy (they had per-user variables) are skipped by the conflict.
            let batch = try await connection.query(
                """
                WITH batch AS (
                    SELECT key FROM users WHERE key > \(after) AND key <= \(through) ORDER BY key LIMIT \(size)
                ), inserted AS (
                    INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid)
                    SELECT key, \(channelKey), \(id), \(xid) FROM batch
                    ON CONFLICT DO NOTHING
                    RETURNING 1
                )
                SELECT (SELECT max(key) FROM batch), (SELECT count(*) FROM inserted)
                """
            ).first!
            let (last, inserted) = try batch.decode((Int64?, Int64).self)
            let reached = last ?? through
            let finished = reached >= through
            try await connection.query(
                """
                UPDATE notifications SET fanout_after = \(reached), recipient_count = recipient_count + \(inserted),
                    fanout_state = \(finished ? "done" : "running")
                WHERE id = \(id)
                """
            )
            return FanoutProgress(notificationID: id, inserted: Int(inserted), finished: finished)
        }
    }
}
