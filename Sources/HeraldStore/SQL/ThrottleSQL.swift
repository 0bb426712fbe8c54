import Foundation
import HeraldCore
import Postgres

/// Throttles in SQL (`sql/0031_throttles.sql`): how many of a channel's notifications a user got
/// within a throttle's window before a given one, read from the recipients' primary key.
enum ThrottleSQL {
    /// Whether user key `user` got fewer than the throttle's limit of channel key `channel`'s
    /// notifications created in the window before `createdAt` (of category `category` when the
    /// throttle counts per category), other than notification `notification`: whether one more may
    /// reach them. Stops counting at the limit.
    static func admits(
        _ throttle: Throttle,
        user: PostgresQuery,
        channel: PostgresQuery,
        notification: PostgresQuery,
        createdAt: PostgresQuery,
        category: PostgresQuery
    ) -> PostgresQuery {
        let sameCategory: PostgresQuery = throttle.per == .category ? "AND earlier.category = \(category)" : ""
        return """
            (SELECT count(*) FROM (SELECT 1 FROM notification_recipients got JOIN notifications earlier ON earlier.id = got.notification_id
                WHERE got.user_key = \(user) AND got.channel_key = \(channel) AND NOT got.deleted AND got.notification_id <> \(notification)
                    AND earlier.created_at > \(createdAt) - \(throttle.windowSeconds ?? 0) * interval '1 second'
                    AND earlier.created_at <= \(createdAt) \(sameCategory)
                LIMIT \(Int64(throttle.limit))) AS counted) < \(Int64(throttle.limit))
            """
    }

    /// The throttle a notification row keeps, as stored.
    static func json(_ throttle: Throttle?) throws -> PostgresJSONB? {
        try throttle.map { try PostgresJSONB(utf8: Array(JSONEncoder().encode($0))) }
    }

    static func decode(_ json: PostgresJSONB?) throws -> Throttle? {
        try json.map { try JSONDecoder().decode(Throttle.self, from: Data($0.utf8)) }
    }
}
