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
        precondition(size > 0, "a batch holds at least one user")
        return try await client.withRetryingTransaction { connection in
            guard let row = try await connection.query(
                """
                SELECT id, channel_key, fanout_after, fanout_through, fanout_skips_existing FROM notifications
                WHERE fanout_state = 'running' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
                """
            ).first else { return nil }
            let (id, channelKey, after, through, skipsExisting) = try row.decode((Int64, Int64, Int64, Int64, Bool).self)
            // The batch's last user: the size-th after `after`, or the end when fewer remain. An
            // index-only scan of the users' keys.
            let last = try await connection.query(
                "SELECT key FROM users WHERE key > \(after) AND key <= \(through) ORDER BY key OFFSET \(size - 1) LIMIT 1"
            ).first?.decode(Int64.self) ?? through
            let xid = try await Self.currentTransactionID(on: connection)
            // A plain INSERT … SELECT unless some users already have a copy: the conflict check of
            // ON CONFLICT costs a speculative insertion per row.
            let inserted = try await connection.query(
                """
                INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid)
                SELECT key, \(channelKey), \(id), \(xid) FROM users WHERE key > \(after) AND key <= \(last)
                \(unescaped: skipsExisting ? "ON CONFLICT DO NOTHING" : "")
                """
            ).affectedRows
            try await Self.countUnread(userKeysAfter: after, through: last, notification: id, channelKey: channelKey, skipsExisting: skipsExisting, on: connection)
            let finished = last >= through
            try await connection.query(
                """
                UPDATE notifications SET fanout_after = \(last), recipient_count = recipient_count + \(Int64(inserted)),
                    fanout_state = \(finished ? "done" : "running")
                WHERE id = \(id)
                """
            )
            return FanoutProgress(notificationID: id, inserted: inserted, finished: finished)
        }
    }

    /// `countUnread` for the users of one batch. Users reached at send time (those with per-user data)
    /// were counted then; excluding them costs a key probe per user, paid only by broadcasts that had
    /// per-user variables.
    static func countUnread(
        userKeysAfter after: Int64, through last: Int64, notification id: Int64, channelKey: Int64,
        skipsExisting: Bool, on connection: PostgresConnection
    ) async throws {
        if skipsExisting {
            try await connection.query(
                """
                INSERT INTO channel_states AS s (user_key, channel_key, unread_count, last_notification_id, last_activity_at)
                SELECT key, \(channelKey), 1, \(id), now() FROM users u WHERE key > \(after) AND key <= \(last)
                    AND NOT EXISTS (SELECT 1 FROM notification_recipients r
                        WHERE r.user_key = u.key AND r.channel_key = \(channelKey) AND r.notification_id = \(id) AND r.data IS NOT NULL)
                ORDER BY key
                ON CONFLICT (user_key, channel_key) DO UPDATE SET
                    unread_count = s.unread_count + 1,
                    last_notification_id = greatest(s.last_notification_id, EXCLUDED.last_notification_id),
                    last_activity_at = EXCLUDED.last_activity_at
                """
            )
        } else {
            try await connection.query(
                """
                INSERT INTO channel_states AS s (user_key, channel_key, unread_count, last_notification_id, last_activity_at)
                SELECT key, \(channelKey), 1, \(id), now() FROM users WHERE key > \(after) AND key <= \(last)
                ORDER BY key
                ON CONFLICT (user_key, channel_key) DO UPDATE SET
                    unread_count = s.unread_count + 1,
                    last_notification_id = greatest(s.last_notification_id, EXCLUDED.last_notification_id),
                    last_activity_at = EXCLUDED.last_activity_at
                """
            )
        }
    }
}
