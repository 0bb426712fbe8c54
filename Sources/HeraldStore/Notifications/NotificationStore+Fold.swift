import Postgres

/// How far the folding of one finished broadcast has come after a batch.
public struct FoldProgress: Sendable, Equatable {
    public var notificationID: Int64
    /// Users whose counters this batch raised.
    public var users: Int
    public var finished: Bool
}

extension NotificationStore {
    /// Folds the next batch of users of the oldest finished, live, not yet folded broadcast that no
    /// other worker holds into those users' counters, in one transaction; `nil` when there is nothing
    /// to fold.
    ///
    /// Until it is folded, a broadcast is counted per request for every user its fan-out reached (the
    /// fan-out writes no counters), and that count grows with every broadcast kept. Folding moves it
    /// into the counters: each user in the batch gets 1 added to their channel's `unread_adjustment`
    /// and the broadcast's `folded_through` passes them in the same transaction, so every unread count
    /// stays what it was at every moment (see `sql/0012_broadcast_folding.sql`). Batches are short
    /// transactions for the same reason as the fan-out's: readers wait for every older transaction.
    public func foldNextBatch(size: Int) async throws -> FoldProgress? {
        precondition(size > 0, "a batch holds at least one user")
        return try await client.withRetryingTransaction { connection in
            // Locked like a fan-out batch, so a concurrent delete sees either none or all of a batch.
            guard
                let row = try await connection.query(
                    """
                    SELECT id, channel_key, folded_through, fanout_through, created_at FROM notifications
                    WHERE audience <> 'targets' AND deleted_at IS NULL AND fanout_state = 'done' AND folded_through < fanout_through
                    ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
                    """
                ).first
            else { return nil }
            let (id, channelKey, after, through, createdAt) = try row.decode((Int64, Int64, Int64, Int64, PostgresTimestamp).self)
            let last = try await Self.copiesBatchEnd(notification: id, after: after, through: through, size: size, on: connection)
            // Every user in the range with a copy was counted per request, whatever they did with
            // their copy since (a topic's fan-out passes users who are not subscribers and gives them
            // none); their activity time takes the broadcast's, which the channel list no longer
            // finds once it is folded.
            let users = try await connection.query(
                """
                INSERT INTO channel_states AS s (user_key, channel_key, unread_adjustment, last_notification_id, last_activity_at)
                SELECT r.user_key, \(channelKey), 1, \(id), \(createdAt) FROM notification_recipients r
                -- Copies outlive an erased user until the erasure's sweep: no state for them.
                JOIN users u ON u.key = r.user_key
                WHERE r.notification_id = \(id) AND r.user_key > \(after) AND r.user_key <= \(last)
                ORDER BY r.user_key
                ON CONFLICT (user_key, channel_key) DO UPDATE SET
                    unread_adjustment = s.unread_adjustment + 1,
                    last_notification_id = greatest(s.last_notification_id, EXCLUDED.last_notification_id),
                    last_activity_at = greatest(s.last_activity_at, EXCLUDED.last_activity_at)
                """
            ).affectedRows
            try await connection.query("UPDATE notifications SET folded_through = \(last) WHERE id = \(id)")
            return FoldProgress(notificationID: id, users: users, finished: last >= through)
        }
    }

    /// The last user key of a batch of `size` copies of the notification after `after`, or `through`
    /// when fewer remain: a range scan of the recipients-by-notification index.
    static func copiesBatchEnd(
        notification id: Int64,
        after: Int64,
        through: Int64,
        size: Int,
        on connection: PostgresConnection
    ) async throws -> Int64 {
        try await connection.query(
            """
            SELECT user_key FROM notification_recipients WHERE notification_id = \(id) AND user_key > \(after) AND user_key <= \(through)
            ORDER BY user_key OFFSET \(size - 1) LIMIT 1
            """
        ).first?.decode(Int64.self) ?? through
    }
}
