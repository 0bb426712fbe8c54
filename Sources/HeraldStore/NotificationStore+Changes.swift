import Foundation
import HeraldCore
import Postgres

extension NotificationStore {
    /// Replaces the notification's variables and content (re-rendered by the caller with the same
    /// template version) for every recipient. Each live copy gets a new change position, so every
    /// recipient's collection shows the update. `nil` when the notification does not exist.
    public func update(_ id: Int64, variables: [String: JSONValue], content: RenderedNotification) async throws -> StoredNotification? {
        try await client.withRetryingTransaction { connection in
            guard let channelKey = try await Self.lockForChange(id, on: connection) else { return nil }
            let overrides = try Self.overridesJSON(content.perUser)
            let strangers = try await connection.query(
                """
                SELECT o.id FROM jsonb_to_recordset(\(overrides)) AS o(id text)
                WHERE NOT EXISTS (
                    SELECT 1 FROM users u JOIN notification_recipients r
                        ON r.user_key = u.key AND r.channel_key = \(channelKey) AND r.notification_id = \(id)
                    WHERE u.id = o.id AND NOT r.deleted)
                ORDER BY o.id
                """
            )
            guard strangers.isEmpty else {
                let ids = try strangers.prefix(Self.listedIDLimit).map { try $0.decode(String.self) }
                throw NotificationStoreError.notRecipients(ids, total: strangers.count)
            }
            let xid = try await Self.currentTransactionID(on: connection)
            try await connection.query(
                """
                UPDATE notification_recipients SET change_xid = \(xid), data = NULL, push_title = NULL, push_body = NULL
                WHERE notification_id = \(id) AND NOT deleted
                """
            )
            try await connection.query(
                """
                UPDATE notification_recipients r SET data = o.data, push_title = o.push_title, push_body = o.push_body
                FROM jsonb_to_recordset(\(overrides)) AS o(id text, data jsonb, push_title text, push_body text)
                JOIN users u ON u.id = o.id
                WHERE r.user_key = u.key AND r.channel_key = \(channelKey) AND r.notification_id = \(id)
                """
            )
            let variablesJSON = try PostgresJSONB(utf8: Array(JSONEncoder().encode(variables)))
            let data = try PostgresJSONB(utf8: Array(JSONEncoder().encode(content.shared.data)))
            try await connection.query(
                """
                UPDATE notifications SET variables = \(variablesJSON), data = \(data), push_title = \(content.shared.pushTitle),
                    push_body = \(content.shared.pushBody), updated_at = now()
                WHERE id = \(id)
                """
            )
            return try await Self.fetch(id, on: connection)
        }
    }

    /// Deletes the notification for every recipient: each copy becomes a tombstone with a new change
    /// position (collections report it as deleted), and an unfinished fan-out stops. False when there
    /// was no such notification.
    public func delete(_ id: Int64) async throws -> Bool {
        try await client.withRetryingTransaction { connection in
            guard try await Self.lockForChange(id, on: connection, allowRunningFanout: true) != nil else { return false }
            let xid = try await Self.currentTransactionID(on: connection)
            // Copies still unread leave their users' unread counters in the same statement.
            try await connection.query(
                """
                WITH gone AS (
                    UPDATE notification_recipients SET change_xid = \(xid), deleted = true, data = NULL, push_title = NULL, push_body = NULL
                    WHERE notification_id = \(id) AND NOT deleted
                    RETURNING user_key, channel_key, status
                )
                UPDATE channel_states s SET unread_count = s.unread_count - 1
                FROM gone WHERE gone.status < 2 AND s.user_key = gone.user_key AND s.channel_key = gone.channel_key
                """
            )
            try await connection.query(
                "UPDATE notifications SET deleted_at = now(), updated_at = now(), fanout_state = 'done' WHERE id = \(id)"
            )
            return true
        }
    }

    /// Locks a live notification against concurrent changes and fan-out batches; returns its channel key.
    static func lockForChange(_ id: Int64, on connection: PostgresConnection, allowRunningFanout: Bool = false) async throws -> Int64? {
        guard let row = try await connection.query(
            "SELECT channel_key, fanout_state FROM notifications WHERE id = \(id) AND deleted_at IS NULL FOR UPDATE"
        ).first else { return nil }
        let (channelKey, state) = try row.decode((Int64, String).self)
        if state == "running", !allowRunningFanout { throw NotificationStoreError.fanoutInProgress }
        return channelKey
    }
}
