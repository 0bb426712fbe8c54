import Foundation
import HeraldCore
import Postgres

/// Throttles in SQL (`sql/0031_throttles.sql`): how many of a channel's notifications a user got
/// within a throttle's window before a given one, read from the recipients' primary key.
enum ThrottleSQL {
    /// Whether user key `user` got fewer than the throttle's limit of channel key `channel`'s
    /// notifications created in the window before `createdAt` (of category `category` when the
    /// throttle counts per category), other than notification `notification`: whether one more may
    /// reach them. Notifications the throttle held back from the user (an event of kind 4: silenced)
    /// do not count, so that under steady traffic alerts keep coming at the limit's rate. `from` is
    /// the first notification id of the window (`windowStart`), which bounds the read of the user's
    /// copies. Stops counting at the limit.
    static func admits(
        _ throttle: Throttle,
        user: PostgresQuery,
        channel: PostgresQuery,
        notification: PostgresQuery,
        createdAt: PostgresQuery,
        category: PostgresQuery,
        from: Int64
    ) -> PostgresQuery {
        let sameCategory: PostgresQuery = throttle.per == .category ? "AND earlier.category = \(category)" : ""
        return """
            (SELECT count(*) FROM (SELECT 1 FROM notification_recipients got JOIN notifications earlier ON earlier.id = got.notification_id
                WHERE got.user_key = \(user) AND got.channel_key = \(channel) AND got.notification_id >= \(from)
                    AND NOT got.deleted AND got.notification_id <> \(notification)
                    AND earlier.created_at > \(createdAt) - \(throttle.windowSeconds ?? 0) * interval '1 second'
                    AND earlier.created_at <= \(createdAt) \(sameCategory)
                    AND NOT EXISTS (SELECT 1 FROM notification_events held WHERE held.notification_id = got.notification_id
                        AND held.kind = \(NotificationEventKind.throttled.rawValue) AND held.user_key = got.user_key)
                LIMIT \(Int64(throttle.limit))) AS counted) < \(Int64(throttle.limit))
            """
    }

    /// The first id among the channel's live notifications created in the throttle's window before
    /// notification `notification`'s creation: the lower bound `admits` reads copies from. One read
    /// of the channel's index by creation time, once per statement.
    static func windowStart(
        _ throttle: Throttle,
        notification id: Int64,
        channelKey: Int64,
        on connection: PostgresConnection
    ) async throws
        -> Int64
    {
        try await connection.query(
            """
            SELECT coalesce(min(earlier.id), \(id)) FROM notifications this, notifications earlier
            WHERE this.id = \(id) AND earlier.channel_key = \(channelKey) AND earlier.deleted_at IS NULL
                AND earlier.created_at > this.created_at - \(throttle.windowSeconds ?? 0) * interval '1 second'
                AND earlier.created_at <= this.created_at
            """
        )[0].decode(Int64.self)
    }

    /// The throttle a notification row keeps, as stored.
    static func json(_ throttle: Throttle?) throws -> PostgresJSONB? {
        try throttle.map { try PostgresJSONB(utf8: Array(JSONEncoder().encode($0))) }
    }

    static func decode(_ json: PostgresJSONB?) throws -> Throttle? {
        try json.map { try JSONDecoder().decode(Throttle.self, from: Data($0.utf8)) }
    }
}
