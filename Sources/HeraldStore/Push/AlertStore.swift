import Foundation
import HeraldCore
import Postgres

/// A recipient an alert may go to, with what the decision needs.
public struct AlertCandidate: Sendable, Equatable {
    public var userKey: Int64
    public var channelKey: Int64
    public var mentioned: Bool
    public var forced: Bool
    public var preferences: PushPreferences
    public var channelOption: PushPreferences.ChannelTriggerOption
    /// The user's choice for the notification's category, else the channel's default for it.
    public var categoryPush: Bool = true
    /// The notification's throttle silences what is beyond its cap, and the user is at it.
    public var throttled: Bool = false
}

/// An alert push claimed for sending, with everything its payload needs from the database.
public struct AlertClaim: Sendable {
    public var id: Int64
    public var userKey: Int64
    public var deviceID: Int64
    public var address: PushAddress
    /// Attempts so far, this one included.
    public var attempts: Int
    public var forced: Bool
    public var notificationID: Int64
    public var channel: CollectionChannel
    public var category: String
    public var createdAt: Date
    /// The template's push title and body as rendered for this recipient, and the data's `title`.
    public var pushTitle: String?
    public var pushBody: String?
    public var dataTitle: String?
    /// The data's `media_url`: the image, video or sound a Notification Service Extension attaches.
    public var mediaURL: String?
    public var push: PushOptions
    public var audience: String
    public var recipientID: String
    public var recipientNickname: String
}

/// The durable queue of alert pushes (`sql/0010_alert_pushes.sql`).
public struct AlertStore: Sendable {
    public let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Turns up to `limit` alert outbox rows into alert pushes: `decide` decides, for each of a row's
    /// recipients who have devices (read with their preferences), whether the alert goes (and
    /// whether forced); each device of those it goes to gets a row, and each user a throttle held back
    /// gets an event (`throttled`, raising `notification.throttled`). One transaction, on one
    /// connection (so a pool of one cannot deadlock): a crash either leaves the outbox row or has
    /// written all. Returns how many outbox rows it took.
    public func expand(
        limit: Int,
        decide: @escaping @Sendable (_ candidates: [AlertCandidate]) -> [AlertDecision]
    ) async throws -> Int {
        try await client.withRetryingTransaction { connection in
            let rows = try await connection.query(
                "SELECT id, notification_id, user_after, user_through FROM alert_outbox ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED"
            )
            for row in rows {
                let (_, notification, after, through) = try row.decode((Int64, Int64, Int64?, Int64?).self)
                // A throttle that silences: whether each user already got its cap in the window.
                let (throttleJSON, channelKey) =
                    try await connection.query(
                        "SELECT throttle, channel_key FROM notifications WHERE id = \(notification)"
                    ).first?.decode((PostgresJSONB?, Int64).self) ?? (nil, Int64(0))
                var throttled: PostgresQuery = "false"
                if let throttle = try ThrottleSQL.decode(throttleJSON), throttle.beyond == .silence {
                    let from = try await ThrottleSQL.windowStart(throttle, notification: notification, channelKey: channelKey, on: connection)
                    let admits = ThrottleSQL.admits(
                        throttle,
                        user: "r.user_key",
                        channel: "r.channel_key",
                        notification: "n.id",
                        createdAt: "n.created_at",
                        category: "n.category",
                        from: from
                    )
                    throttled = "NOT (\(admits))"
                }
                let candidates = try await connection.query(
                    """
                    SELECT r.user_key, r.channel_key, \(throttled),
                        u.id IN (SELECT jsonb_array_elements_text(coalesce(n.push->'mentioned_user_ids', '[]'))),
                        u.id IN (SELECT jsonb_array_elements_text(coalesce(n.push->'force_push', '[]'))),
                        coalesce(cp.trigger_option, 'default'), coalesce(catp.push, n.push_default), \(PushPreferenceStore.columns)
                    FROM notifications n
                    JOIN notification_recipients r ON r.notification_id = n.id
                    JOIN users u ON u.key = r.user_key
                    LEFT JOIN push_preferences p ON p.user_key = r.user_key
                    LEFT JOIN channel_push_preferences cp ON cp.user_key = r.user_key AND cp.channel_key = r.channel_key
                    LEFT JOIN category_preferences catp
                        ON catp.user_key = r.user_key AND catp.channel_key = r.channel_key AND catp.category = n.category
                    WHERE n.id = \(notification) AND n.deleted_at IS NULL AND NOT r.deleted
                        -- A digest alerting at its window's end: not to users who have read it by then.
                        AND (n.batch IS NULL OR r.status < \(CollectionItem.Status.read))
                        -- Bounds the index on (notification_id, user_key) can use; `IS NULL OR` would read
                        -- every recipient of the notification for each outbox row.
                        AND r.user_key > coalesce(\(after), \(Int64.min)) AND r.user_key <= coalesce(\(through), \(Int64.max))
                        AND EXISTS (SELECT 1 FROM devices d WHERE d.user_key = r.user_key)
                    """
                ).map { row in
                    // The five columns above, the trigger option and the category's push, then the preferences.
                    var preferencesColumn = 7
                    return AlertCandidate(
                        userKey: try row.decode(column: 0, as: Int64.self),
                        channelKey: try row.decode(column: 1, as: Int64.self),
                        mentioned: try row.decode(column: 3, as: Bool.self),
                        forced: try row.decode(column: 4, as: Bool.self),
                        preferences: try PushPreferenceStore.decode(row, at: &preferencesColumn),
                        channelOption: PushPreferences.ChannelTriggerOption(rawValue: try row.decode(column: 5, as: String.self)) ?? .default,
                        categoryPush: try row.decode(column: 6, as: Bool.self),
                        throttled: try row.decode(column: 2, as: Bool.self)
                    )
                }
                guard !candidates.isEmpty else { continue }
                let decisions = decide(candidates)
                let chosen = zip(candidates, decisions).compactMap { candidate, decision -> (userKey: Int64, forced: Bool)? in
                    guard case .send(let forced) = decision else { return nil }
                    return (candidate.userKey, forced)
                }
                let held = zip(candidates, decisions).filter { $0.1 == .suppressed(.throttled) }.map(\.0.userKey)
                if !held.isEmpty { try await Self.recordThrottled(notification: notification, users: held, on: connection) }
                guard !chosen.isEmpty else { continue }
                try await connection.query(
                    """
                    INSERT INTO alert_pushes (user_key, device_id, notification_id, forced, service)
                    SELECT d.user_key, d.id, \(notification), c.forced, d.service
                    FROM unnest(\(chosen.map(\.userKey))::int8[], \(chosen.map(\.forced))::bool[]) AS c(user_key, forced)
                    JOIN devices d ON d.user_key = c.user_key
                    """
                )
            }
            let ids = try rows.map { try $0.decode(column: 0, as: Int64.self) }
            try await connection.query("DELETE FROM alert_outbox WHERE id = ANY(\(ids))")
            return rows.count
        }
    }

    /// Events of kind `throttled` for `users`, whose alert of the notification a throttle held back,
    /// and their webhook events.
    static func recordThrottled(notification id: Int64, users: [Int64], on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            WITH held AS (
                INSERT INTO notification_events (notification_id, kind, user_key)
                SELECT \(id), \(NotificationEventKind.throttled.rawValue), unnest(\(users)::int8[])
                ON CONFLICT DO NOTHING
                RETURNING user_key
            )
            SELECT herald_webhook_event('notification.throttled', jsonb_build_object('notification_id', \(id)::text,
                'channel_url', c.url, 'user_id', u.id, 'beyond', 'silence', 'at', \(TimeSQL.rfc3339("now()"))))
            FROM held JOIN users u ON u.key = held.user_key
            JOIN notifications n ON n.id = \(id) JOIN channels c ON c.key = n.channel_key
            WHERE herald_webhook_wanted('notification.throttled')
            """
        )
    }

    /// Claims up to `limit` due alert pushes to devices of `service`. Alerts to recipients who are
    /// online by `policy` are dropped (they see the notification live), as are alerts whose
    /// notification was deleted.
    public func claimDue(service: PushService = .apns, limit: Int, lease: Duration, policy: MultiDevicePolicy) async throws -> [AlertClaim] {
        let online = PresenceSQL.online(deviceColumn: "a.device_id", userColumn: "a.user_key", policy: policy)
        let claimed = try await client.query(
            """
            WITH due AS (
                SELECT id FROM alert_pushes
                WHERE service = \(service.rawValue) AND next_attempt_at <= now() AND (claimed_until IS NULL OR claimed_until < now())
                ORDER BY next_attempt_at, id LIMIT \(limit) FOR UPDATE SKIP LOCKED
            ), online AS (
                DELETE FROM alert_pushes a USING due WHERE a.id = due.id AND \(online)
                RETURNING a.id
            )
            UPDATE alert_pushes a SET claimed_until = now() + \(TimeSQL.interval(lease))::interval, attempts = a.attempts + 1
            FROM due WHERE a.id = due.id AND a.id NOT IN (SELECT id FROM online)
            RETURNING a.id
            """
        ).map { try $0.decode(Int64.self) }
        guard !claimed.isEmpty else { return [] }
        let rows = try await client.query(
            """
            SELECT a.id, a.user_key, a.device_id, a.attempts, a.forced,
                n.id, c.key, c.kind, c.name, c.cover_url, c.custom_type, c.url, n.category, n.created_at,
                \(TranslationSQL.pushTitle), \(TranslationSQL.pushBody), \(TranslationSQL.data)->>'title',
                n.push, n.audience, u.id, u.nickname, \(TranslationSQL.data)->>'media_url', \(PushAddress.columns("d"))
            FROM alert_pushes a
            JOIN devices d ON d.id = a.device_id
            JOIN notifications n ON n.id = a.notification_id AND n.deleted_at IS NULL
            JOIN channels c ON c.key = n.channel_key
            JOIN users u ON u.key = a.user_key
            LEFT JOIN notification_recipients r ON r.user_key = a.user_key AND r.channel_key = n.channel_key AND r.notification_id = n.id
            WHERE a.id = ANY(\(claimed)) AND (r.deleted IS NULL OR NOT r.deleted)
            ORDER BY a.id
            """
        )
        let decoder = JSONDecoder()
        let claims = try rows.map { row in
            let (id, user, device, attempts, forced) = try row.decode((Int64, Int64, Int64, Int32, Bool).self)
            let (kind, name, cover, customType, url) = (
                try row.decode(column: 7, as: String.self), try row.decode(column: 8, as: String.self),
                try row.decode(column: 9, as: String.self), try row.decode(column: 10, as: String.self), try row.decode(column: 11, as: String.self)
            )
            return AlertClaim(
                id: id,
                userKey: user,
                deviceID: device,
                address: try PushAddress.decode(row, at: 22),
                attempts: Int(attempts),
                forced: forced,
                notificationID: try row.decode(column: 5, as: Int64.self),
                channel: CollectionChannel(
                    key: try row.decode(column: 6, as: Int64.self),
                    url: url,
                    kind: Channel.Kind(rawValue: kind) ?? .feed,
                    name: name,
                    coverURL: cover,
                    customType: customType
                ),
                category: try row.decode(column: 12, as: String.self),
                createdAt: try row.decode(column: 13, as: Date.self),
                pushTitle: try row.decode(column: 14, as: String?.self),
                pushBody: try row.decode(column: 15, as: String?.self),
                dataTitle: try row.decode(column: 16, as: String?.self),
                mediaURL: try row.decode(column: 21, as: String?.self),
                push: try decoder.decode(PushOptions.self, from: Data(try row.decode(column: 17, as: PostgresJSONB.self).utf8)),
                audience: try row.decode(column: 18, as: String.self),
                recipientID: try row.decode(column: 19, as: String.self),
                recipientNickname: try row.decode(column: 20, as: String.self)
            )
        }
        // Claimed but gone (the notification or the copy was deleted meanwhile): nothing to send.
        let gone = Set(claimed).subtracting(claims.map(\.id))
        if !gone.isEmpty { try await client.query("DELETE FROM alert_pushes WHERE id = ANY(\(Array(gone)))") }
        return claims
    }

    /// Users by id: nickname and profile URL (senders and mentioned users of alert payloads).
    public func people(ids: [String]) async throws -> [String: (nickname: String, profileURL: String)] {
        guard !ids.isEmpty else { return [:] }
        var result: [String: (nickname: String, profileURL: String)] = [:]
        for row in try await client.query("SELECT id, nickname, profile_url FROM users WHERE id = ANY(\(ids))") {
            let (id, nickname, profile) = try row.decode((String, String, String).self)
            result[id] = (nickname, profile)
        }
        return result
    }

    /// Each user's unread copies of notifications that ask not to count in the badge. The conditions
    /// on `n` are the predicate of `notifications_uncounted` (`sql/0015`), which lets the planner
    /// start from those notifications: keep them in step.
    public func uncountedUnread(userKeys: [Int64]) async throws -> [Int64: Int64] {
        var result: [Int64: Int64] = [:]
        for row in try await client.query(
            """
            SELECT r.user_key, count(*) FROM notification_recipients r JOIN notifications n ON n.id = r.notification_id
            WHERE r.user_key = ANY(\(userKeys)) AND r.status < \(CollectionItem.Status.read) AND NOT r.deleted AND n.deleted_at IS NULL
                AND n.push->>'counted_in_badge' = 'false'
            GROUP BY r.user_key
            """
        ) {
            let (user, count) = try row.decode((Int64, Int64).self)
            result[user] = count
        }
        return result
    }

    /// Delivered: the rows go, and their notifications count the pushes.
    public func recordDelivered(_ claims: [AlertClaim]) async throws {
        guard !claims.isEmpty else { return }
        try await client.transaction([
            "DELETE FROM alert_pushes WHERE id = ANY(\(claims.map(\.id)))",
            PushStore.countPushes(notificationIDs: claims.map(\.notificationID)),
        ])
    }

    /// Try again no earlier than `after` from now.
    public func recordRetry(_ claim: AlertClaim, after delay: Duration) async throws {
        try await client.query(
            "UPDATE alert_pushes SET next_attempt_at = now() + \(TimeSQL.interval(delay))::interval, claimed_until = NULL WHERE id = \(claim.id)"
        )
    }

    /// Refused for good or out of retries: listed for admins (the token removed when dead), the row gone.
    public func recordFailure(_ claim: AlertClaim, status: Int?, reason: String, removeToken: Bool, invalidSince: Date?) async throws {
        try await client.withRetryingTransaction { connection in
            _ = try await PushStore.recordFailure(
                userKey: claim.userKey,
                deviceID: claim.deviceID,
                address: claim.address,
                status: status,
                reason: "alert: \(reason)",
                attempts: claim.attempts,
                removeToken: removeToken,
                invalidSince: invalidSince,
                on: connection
            )
            try await connection.query("DELETE FROM alert_pushes WHERE id = \(claim.id)")
        }
    }
}
