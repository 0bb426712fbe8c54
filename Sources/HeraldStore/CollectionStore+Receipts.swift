import Foundation
import HeraldCore
import Postgres

/// A receipt or event named notifications the caller has no copy of; nothing was written.
public struct NotRecipientError: Error, Sendable, Equatable {
    public var ids: [Int64]
}

/// What a user reports about notifications they received.
public enum NotificationEventKind: Int16, Sendable, CaseIterable {
    case viewed = 1, clicked = 2

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
        return try await client.withRetryingTransaction { connection in
            try await Self.requireCopies(userKey: userKey, ids: ids, on: connection)
            let xid = try await NotificationStore.currentTransactionID(on: connection)
            let rows = try await connection.query(
                """
                WITH target AS (
                    SELECT r.channel_key, r.notification_id, r.status
                    FROM unnest(\(ids)::int8[]) AS t(id) JOIN notifications n ON n.id = t.id
                    JOIN notification_recipients r ON r.user_key = \(userKey) AND r.channel_key = n.channel_key AND r.notification_id = t.id
                    WHERE r.delivered_at IS NULL AND NOT r.deleted
                    ORDER BY r.channel_key, r.notification_id
                    FOR UPDATE OF r
                )
                UPDATE notification_recipients r SET status = greatest(r.status, 1), delivered_at = now(),
                    change_xid = CASE WHEN t.status = 0 THEN \(xid) ELSE r.change_xid END
                FROM target t
                WHERE r.user_key = \(userKey) AND r.channel_key = t.channel_key AND r.notification_id = t.notification_id
                RETURNING r.channel_key, r.notification_id, t.status = 0
                """
            )
            var changed: [Int64: [Int64]] = [:]
            for row in rows {
                let (channel, id, upgraded) = try row.decode((Int64, Int64, Bool).self)
                if upgraded { changed[channel, default: []].append(id) }
            }
            let result = changed.keys.sorted().map { (channelKey: $0, ids: changed[$0]!.sorted()) }
            for (channelKey, ids) in result {
                for start in stride(from: 0, to: ids.count, by: LiveHint.maximumIDs) {
                    let chunk = Array(ids[start..<min(start + LiveHint.maximumIDs, ids.count)])
                    try await LiveHint.delivered(userKey: userKey, channelKey: channelKey, notificationIDs: chunk).send(on: connection)
                }
            }
            return result
        }
    }

    /// Logs that the user viewed or clicked `ids` (counted per user: how often, first and last time).
    /// Every id must be one of the user's notifications, else nothing is written.
    public func logEvent(_ kind: NotificationEventKind, userKey: Int64, ids: [Int64]) async throws {
        let ids = Array(Set(ids)).sorted()
        guard !ids.isEmpty else { return }
        try await client.withRetryingTransaction { connection in
            try await Self.requireCopies(userKey: userKey, ids: ids, on: connection)
            try await connection.query(
                """
                INSERT INTO notification_events AS e (notification_id, kind, user_key)
                SELECT id, \(kind.rawValue), \(userKey) FROM unnest(\(ids)::int8[]) AS t(id)
                ON CONFLICT (notification_id, kind, user_key) DO UPDATE SET count = e.count + 1, last_at = now()
                """
            )
        }
    }

    /// Fails with the ids the user has no copy of (deleted copies count as theirs: a late receipt for
    /// a deleted notification is not an error).
    static func requireCopies(userKey: Int64, ids: [Int64], on connection: PostgresConnection) async throws {
        let strangers = try await connection.query(
            """
            SELECT t.id FROM unnest(\(ids)::int8[]) AS t(id)
            WHERE NOT EXISTS (
                SELECT 1 FROM notifications n JOIN notification_recipients r
                    ON r.user_key = \(userKey) AND r.channel_key = n.channel_key AND r.notification_id = n.id
                WHERE n.id = t.id)
            ORDER BY t.id
            """
        ).map { try $0.decode(Int64.self) }
        if !strangers.isEmpty { throw NotRecipientError(ids: strangers) }
    }
}
