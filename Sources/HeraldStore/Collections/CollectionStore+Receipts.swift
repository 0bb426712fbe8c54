import Foundation
import HeraldCore
import Postgres

/// A receipt or event named notifications the caller has no copy of; nothing was written.
public struct NotRecipientError: Error, Sendable, Equatable {
    public var ids: [Int64]
}

/// What a user reports about notifications they received.
public enum NotificationEventKind: Int16, Sendable, CaseIterable {
    case viewed = 1
    case clicked = 2
    /// Pressed one of the notification's actions (`pressAction`, not `logEvent`).
    case acted = 3
    /// Held back by the notification's throttle: no alert, or no copy (`ThrottleSQL`).
    case throttled = 4

    public init?(name: String) {
        switch name {
        case "viewed": self = .viewed
        case "clicked": self = .clicked
        default: return nil
        }
    }
}

extension CollectionStore {
    /// Marks the user's copies of `ids` delivered (a receipt from the device). A `SENT` copy becomes
    /// `DELIVERED` with a new change position; a `READ` copy keeps its status (never downgraded) and
    /// only gets its delivery time if it had none; a copy already delivered is left alone, so a
    /// repeated receipt changes nothing. Copies the user had removed are skipped. Every id must be one
    /// of the user's notifications, else nothing is written (`NotRecipientError`).
    ///
    /// Returns, per channel, the ids whose status changed (what `delivery.updated` announces).
    public func markDelivered(userKey: Int64, ids: [Int64]) async throws -> [(channelKey: Int64, ids: [Int64])] {
        let ids = Array(Set(ids)).sorted()
        guard !ids.isEmpty else { return [] }
        // One statement, so one round trip and atomic without a transaction around it: the check for
        // strangers (which stops every write), the row locks in a fixed order, the update, and the
        // live hints for what it changed. Rows come back as (nil, stranger's id) or (channel, id).
        let rows = try await client.retryingQuery(
            Self.receiptQuery(
                """
                WITH strangers AS (\(Self.strangersSQL)),
                target AS (
                    SELECT r.channel_key, r.notification_id, r.status
                    FROM unnest($2::int8[]) AS t(id) JOIN notifications n ON n.id = t.id
                    JOIN notification_recipients r ON r.user_key = $1 AND r.channel_key = n.channel_key AND r.notification_id = t.id
                    WHERE r.delivered_at IS NULL AND NOT r.deleted AND NOT EXISTS (SELECT 1 FROM strangers)
                    ORDER BY r.channel_key, r.notification_id
                    FOR UPDATE OF r
                ),
                updated AS (
                    UPDATE notification_recipients r SET status = greatest(r.status, \(CollectionItem.Status.delivered.rawValue)), delivered_at = now(),
                        change_xid = CASE WHEN t.status = \(CollectionItem.Status.sent.rawValue) THEN \(ChangePositionSQL.currentTransactionID.sql) ELSE r.change_xid END
                    FROM target t
                    WHERE r.user_key = $1 AND r.channel_key = t.channel_key AND r.notification_id = t.notification_id
                    RETURNING r.user_key, r.channel_key, r.notification_id, t.status = \(CollectionItem.Status.sent.rawValue) AS upgraded
                ),
                hints AS (\(LiveHint.deliveredHintsSQL(from: "updated WHERE upgraded"))),
                hooks AS (
                    SELECT herald_webhook_event('notification.delivered', jsonb_build_object('notification_id', u.notification_id::text,
                        'channel_url', c.url, 'user_id', usr.id, 'delivered_at', \(TimeSQL.rfc3339("now()").sql)))
                    FROM updated u JOIN channels c ON c.key = u.channel_key JOIN users usr ON usr.key = u.user_key
                    WHERE herald_webhook_wanted('notification.delivered')
                )
                SELECT NULL::int8, id FROM strangers
                UNION ALL
                SELECT channel_key, notification_id FROM updated WHERE upgraded
                UNION ALL
                -- A WITH query that only reads runs only when read: this reads every hint and webhook
                -- event, and yields no row.
                SELECT NULL, NULL FROM (SELECT 1 FROM hints UNION ALL SELECT 1 FROM hooks) AS side_effects HAVING count(*) < 0
                """,
                userKey: userKey,
                ids: ids
            )
        )
        var strangers: [Int64] = []
        var changed: [Int64: [Int64]] = [:]
        for row in rows {
            let (channel, id) = try row.decode((Int64?, Int64).self)
            if let channel { changed[channel, default: []].append(id) } else { strangers.append(id) }
        }
        if !strangers.isEmpty { throw NotRecipientError(ids: strangers.sorted()) }
        return changed.keys.sorted().map { (channelKey: $0, ids: changed[$0]!.sorted()) }
    }

    /// Logs that the user viewed or clicked `ids` (counted per user: how often, first and last time).
    /// Every id must be one of the user's notifications, else nothing is written.
    public func logEvent(_ kind: NotificationEventKind, userKey: Int64, ids: [Int64]) async throws {
        let ids = Array(Set(ids)).sorted()
        guard !ids.isEmpty else { return }
        // One statement: the check for strangers stops the insert within it.
        let strangers = try await client.retryingQuery(
            Self.receiptQuery(
                """
                WITH strangers AS (\(Self.strangersSQL)),
                logged AS (
                    INSERT INTO notification_events AS e (notification_id, kind, user_key)
                    SELECT id, $3, $1 FROM unnest($2::int8[]) AS t(id) WHERE NOT EXISTS (SELECT 1 FROM strangers)
                    ON CONFLICT (notification_id, kind, user_key) DO UPDATE SET count = e.count + 1, last_at = now()
                    RETURNING notification_id, count
                ),
                hooks AS (
                    SELECT herald_webhook_event(type, jsonb_build_object('notification_id', l.notification_id::text, 'channel_url', c.url,
                        'user_id', usr.id, 'count', l.count, 'at', \(TimeSQL.rfc3339("now()").sql)))
                    FROM (SELECT CASE $3 WHEN \(NotificationEventKind.viewed.rawValue) THEN 'notification.viewed' ELSE 'notification.clicked' END) AS k(type)
                    CROSS JOIN logged l JOIN notifications n ON n.id = l.notification_id JOIN channels c ON c.key = n.channel_key
                    JOIN users usr ON usr.key = $1
                    WHERE herald_webhook_wanted(type)
                )
                SELECT id FROM strangers
                UNION ALL
                -- Reads every webhook event (a WITH query that only reads runs only when read); yields no row.
                SELECT NULL::int8 FROM hooks HAVING count(*) < 0
                ORDER BY 1
                """,
                userKey: userKey,
                ids: ids,
                kind: kind
            )
        ).map { try $0.decode(Int64.self) }
        if !strangers.isEmpty { throw NotRecipientError(ids: strangers) }
    }

    /// A receipt's statement, which names its parameters more than once: `$1` is the user's key, `$2`
    /// the ids (`int8[]`), `$3` the event kind when there is one.
    private static func receiptQuery(_ sql: String, userKey: Int64, ids: [Int64], kind: NotificationEventKind? = nil) -> PostgresQuery {
        var bindings = PostgresBindings()
        bindings.append(userKey)
        bindings.append(ids)
        if let kind { bindings.append(kind.rawValue) }
        return PostgresQuery(unsafeSQL: sql, bindings: bindings)
    }

    /// The ids of `$2` the user `$1` has no copy of, as a query for `receiptQuery` statements (deleted
    /// copies count as theirs: a late receipt for a deleted notification is not an error).
    private static let strangersSQL = """
        SELECT t.id FROM unnest($2::int8[]) AS t(id)
        WHERE NOT EXISTS (
            SELECT 1 FROM notifications n JOIN notification_recipients r
                ON r.user_key = $1 AND r.channel_key = n.channel_key AND r.notification_id = n.id
            WHERE n.id = t.id)
        """
}
