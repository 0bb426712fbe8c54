import HeraldCore
import Postgres

/// How far one broadcast's fan-out (`audience: "all"` or a topic) has come after a batch.
public struct FanoutProgress: Sendable, Equatable {
    public var notificationID: Int64
    /// Recipient rows this batch inserted.
    public var inserted: Int
    /// Users a throttle that drops left without a copy in this batch.
    public var dropped: Int
    public var finished: Bool
}

extension NotificationStore {
    /// Reaches the next batch of users for the oldest unfinished broadcast (`all` or a topic) that no
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
            guard
                let row = try await connection.query(
                    """
                    SELECT id, channel_key, fanout_after, fanout_through, fanout_skips_existing, topic_key, excluded_keys, category, inbox_default,
                        renders_per_recipient, ARRAY(SELECT jsonb_object_keys(variants)), time_zones, throttle, batch_key
                    FROM notifications
                    WHERE fanout_state = 'running' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
                    """
                ).first
            else { return nil }
            let (id, channelKey, after, through, skipsExisting) = try row.decode((Int64, Int64, Int64, Int64, Bool).self)
            let topicKey = try row.decode(column: 5, as: Int64?.self)
            let excludedKeys = try row.decode(column: 6, as: [Int64].self)
            let (category, inboxDefault) = (try row.decode(column: 7, as: String.self), try row.decode(column: 8, as: Bool.self))
            let rendersPerRecipient = try row.decode(column: 9, as: Bool.self)
            let variantTags = try row.decode(column: 10, as: [String].self)
            let timeZones = try row.decode(column: 11, as: [String]?.self)
            let throttle = try ThrottleSQL.decode(try row.decode(column: 12, as: PostgresJSONB?.self))
            let batchKey = try row.decode(column: 13, as: String?.self)
            let last: Int64
            if let topicKey {
                last = try await Self.subscribersBatchEnd(topic: topicKey, after: after, through: through, size: size, on: connection)
            } else {
                last = try await Self.batchEnd(after: after, through: through, size: size, on: connection)
            }
            let xid = try await Self.currentTransactionID(on: connection)
            if skipsExisting { try await Self.uncountReachedAtSend(userKeysAfter: after, through: last, notification: id, on: connection) }
            // No per-recipient counter is written: the notification's progress (`fanout_after`) is what
            // counts it as unread for the users it has reached, until it is folded into their counters
            // once the fan-out is done (`foldNextBatch`). A plain INSERT … SELECT unless some users
            // already have a copy: the conflict check of ON CONFLICT costs a speculative insertion per row.
            // A topic's subscribers are read as they are now, in this batch's transaction: a user
            // (un)subscribing concurrently is in one batch's range only, so gets one copy or none.
            // Qualified: the conditions below hold subqueries with a `user_key` of their own.
            let userColumn: PostgresQuery = topicKey == nil ? "u.key" : "s.user_key"
            // A translated notification's copies name their variant, chosen by the user's locale in
            // the same statement; a topic's subscribers are then read with their user row.
            let variant = TranslationSQL.variant(locale: "u.locale", tags: variantTags)
            let readsUsers = !variantTags.isEmpty || timeZones != nil
            /// The batch's users (`FROM … WHERE …`): everyone in the key range, or the topic's
            /// subscribers there, read with their user row when `joiningUsers`.
            func batchUsers(joiningUsers: Bool) -> PostgresQuery {
                topicKey.map {
                    """
                    FROM topic_subscriptions s \(joiningUsers ? "JOIN users u ON u.key = s.user_key" : "" as PostgresQuery)
                    WHERE s.topic_key = \($0) AND s.user_key > \(after) AND s.user_key <= \(last) AND NOT s.muted
                    """
                } ?? "FROM users u WHERE u.key > \(after) AND u.key <= \(last)"
            }
            let source: PostgresQuery = "SELECT \(userColumn), \(channelKey), \(id), \(xid), \(variant) \(batchUsers(joiningUsers: readsUsers))"
            // Users who turned the category off for their inbox get no copy (and so no count, push or
            // event): sql/0025.
            let inbox = CategoryPreferenceSQL.inboxAdmits(
                user: userColumn,
                channel: "\(channelKey)",
                category: "\(category)",
                inboxDefault: inboxDefault
            )
            var excluding: PostgresQuery = excludedKeys.isEmpty ? "" : "AND \(userColumn) <> ALL(\(excludedKeys)::int8[])"
            // A part of a send scheduled for a local time: the users of its time zones.
            if let timeZones { excluding = "\(excluding) AND u.time_zone = ANY(\(timeZones))" }
            // A batched send: users with an open digest of its key get theirs changed instead of a
            // copy (a digest is one copy, so a throttle does not hold a fold back).
            var folded = 0
            if let batchKey {
                let digests = try await Self.openDigests(channelKey: channelKey, key: batchKey, except: id, on: connection)
                folded = try await Self.fold(
                    notification: id,
                    into: digests,
                    channelKey: channelKey,
                    reaching: .batch(
                        "SELECT \(userColumn) \(batchUsers(joiningUsers: readsUsers)) \(excluding) AND \(inbox)",
                        after: after,
                        through: last
                    ),
                    xid: xid,
                    on: connection
                )
                if folded > 0 {
                    excluding =
                        "\(excluding) AND NOT \(Self.holdsDigest(user: userColumn, channelKey: channelKey, digests: digests, within: (after, last)))"
                }
            }
            // A throttle that drops: users at its cap get no copy, and an event says so.
            var dropped = 0
            if throttle?.beyond == .drop {
                let admits = try await Self.throttleAdmits(
                    throttle,
                    user: userColumn,
                    notification: id,
                    channelKey: channelKey,
                    category: category,
                    on: connection
                )
                dropped = try await Self.recordDropped(
                    throttle,
                    admits: admits,
                    users: "\(batchUsers(joiningUsers: readsUsers)) \(excluding) AND \(inbox)",
                    user: userColumn,
                    notification: id,
                    channelKey: channelKey,
                    on: connection
                )
                excluding = "\(excluding) AND \(admits)"
            }
            let inserted: Int
            if rendersPerRecipient {
                // The same users, read with their profiles and rendered here: only templates that read
                // the profile give up the set-based insert.
                inserted = try await Self.insertRenderedCopies(
                    notification: id,
                    channelKey: channelKey,
                    xid: xid,
                    users: "SELECT \(Self.profileColumns) \(batchUsers(joiningUsers: true)) \(excluding) AND \(inbox)",
                    skipsExisting: skipsExisting,
                    on: connection
                )
            } else {
                inserted = try await connection.query(
                    """
                    INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid, variant)
                    \(source) \(excluding) AND \(inbox)
                    \(skipsExisting ? "ON CONFLICT DO NOTHING" : "" as PostgresQuery)
                    """
                ).affectedRows
            }
            let finished = last >= through
            try await PushStore.enqueue(
                notification: id,
                channelKey: channelKey,
                change: .created,
                usersAfter: after,
                through: last,
                // Only some users of the range have a copy: a topic's, a local time's zones, a
                // throttle's, those without a digest to fold into.
                sparse: topicKey != nil || timeZones != nil || throttle?.beyond == .drop || folded > 0,
                on: connection
            )
            try await connection.query(
                """
                UPDATE notifications SET fanout_after = \(last), recipient_count = recipient_count + \(Int64(inserted)),
                    fanout_state = \(finished ? "done" : "running")
                WHERE id = \(id)
                """
            )
            return FanoutProgress(notificationID: id, inserted: inserted, dropped: dropped, finished: finished)
        }
    }

    /// The last user key of a batch of `size` users after `after`: the size-th existing user, or
    /// `through` when fewer remain. An index-only scan of the users' keys.
    static func batchEnd(after: Int64, through: Int64, size: Int, on connection: PostgresConnection) async throws -> Int64 {
        try await connection.query(
            "SELECT key FROM users WHERE key > \(after) AND key <= \(through) ORDER BY key OFFSET \(size - 1) LIMIT 1"
        ).first?.decode(Int64.self) ?? through
    }

    /// The last user key of a batch of `size` subscribers of the topic after `after`, or `through`
    /// when fewer remain: a range scan of the subscriptions' primary key.
    static func subscribersBatchEnd(topic: Int64, after: Int64, through: Int64, size: Int, on connection: PostgresConnection) async throws -> Int64 {
        try await connection.query(
            """
            SELECT user_key FROM topic_subscriptions WHERE topic_key = \(topic) AND user_key > \(after) AND user_key <= \(through)
            ORDER BY user_key OFFSET \(size - 1) LIMIT 1
            """
        ).first?.decode(Int64.self) ?? through
    }

    /// Users who got their copy at send time (per-user variables) were counted in their channel state
    /// then; once the fan-out passes them, the per-channel broadcast count covers them too, so their
    /// send-time count is taken back. Runs before the batch's insert, when the only copies in the range
    /// are the send-time ones.
    static func uncountReachedAtSend(
        userKeysAfter after: Int64,
        through last: Int64,
        notification id: Int64,
        on connection: PostgresConnection
    ) async throws {
        try await connection.query(
            """
            UPDATE channel_states s SET unread_adjustment = s.unread_adjustment - 1
            FROM notification_recipients r
            WHERE r.notification_id = \(id) AND r.user_key > \(after) AND r.user_key <= \(last)
                AND s.user_key = r.user_key AND s.channel_key = r.channel_key
            """
        )
    }
}
