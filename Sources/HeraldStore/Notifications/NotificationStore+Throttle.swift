import HeraldCore
import Postgres

/// Throttles at the copies: a notification whose throttle drops what is beyond the cap gives no copy
/// to a user who already got the limit within the window (`sql/0031_throttles.sql`).
extension NotificationStore {
    /// The condition under which user `user` (a key expression) gets a copy of notification `id`:
    /// always, unless its throttle drops and the user is at the cap. Judged against the notification's
    /// creation time, so every batch of a fan-out counts the same window.
    static func throttleAdmits(
        _ throttle: Throttle?,
        user: PostgresQuery,
        notification id: Int64,
        channelKey: Int64,
        category: String,
        on connection: PostgresConnection
    ) async throws -> PostgresQuery {
        guard let throttle, throttle.beyond == .drop else { return "true" }
        return ThrottleSQL.admits(
            throttle,
            user: user,
            channel: "\(channelKey)",
            notification: "\(id)",
            createdAt: "(SELECT created_at FROM notifications WHERE id = \(id))",
            category: "\(category)",
            from: try await ThrottleSQL.windowStart(throttle, notification: id, channelKey: channelKey, on: connection)
        )
    }

    /// Records, for each user of `users` (a `FROM … WHERE …` naming the user key `user`, of the users
    /// the send would otherwise reach) whom the throttle `admits` (from `throttleAdmits`) keeps the
    /// copy from, an event of kind `throttled` and the webhook event `notification.throttled`. Runs
    /// before the copies are written, so it sees what they will see; a user who has their copy
    /// already (one with variables of their own, given it at the send) is not held back. Nothing when
    /// the throttle does not drop. Returns how many users it held back.
    @discardableResult
    static func recordDropped(
        _ throttle: Throttle?,
        admits: PostgresQuery,
        users: PostgresQuery,
        user: PostgresQuery,
        notification id: Int64,
        channelKey: Int64,
        on connection: PostgresConnection
    ) async throws -> Int {
        guard throttle?.beyond == .drop else { return 0 }
        return Int(
            try await connection.query(
                """
                WITH held AS (
                    INSERT INTO notification_events (notification_id, kind, user_key)
                    SELECT \(id), \(NotificationEventKind.throttled.rawValue), \(user) \(users) AND NOT (\(admits))
                        AND NOT EXISTS (SELECT 1 FROM notification_recipients mine
                            WHERE mine.user_key = \(user) AND mine.channel_key = \(channelKey) AND mine.notification_id = \(id))
                    ON CONFLICT DO NOTHING
                    RETURNING user_key
                ), hooks AS MATERIALIZED (
                    -- Materialized, so that each held user's event is made: the count reads every row.
                    SELECT herald_webhook_event('notification.throttled', jsonb_build_object('notification_id', \(id)::text,
                        'channel_url', c.url, 'user_id', u.id, 'beyond', 'drop', 'at', \(TimeSQL.rfc3339("now()"))))
                    FROM held JOIN users u ON u.key = held.user_key JOIN channels c ON c.key = \(channelKey)
                    WHERE herald_webhook_wanted('notification.throttled')
                )
                SELECT (SELECT count(*) FROM held), (SELECT count(*) FROM hooks)
                """
            )[0].decode(column: 0, as: Int64.self)
        )
    }
}
