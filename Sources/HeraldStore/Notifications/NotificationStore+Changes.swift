import Foundation
import HeraldCore
import Postgres

extension NotificationStore {
    /// Replaces the notification's variables and content (re-rendered by the caller with the same
    /// template version) for every recipient. Each live copy gets a new change position, so every
    /// recipient's collection shows the update; when the template reads the recipient's profile, every
    /// copy the caller did not render is rendered again here. `nil` when the notification does not
    /// exist.
    public func update(_ id: Int64, variables: [String: JSONValue], content: RenderedNotification) async throws -> StoredNotification? {
        try await client.withRetryingTransaction { connection in
            guard let channelKey = try await Self.lockForChange(id, on: connection)?.channelKey else { return nil }
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
                UPDATE notification_recipients r SET data = o.data, push_title = o.push_title, push_body = o.push_body,
                    variant = \(TranslationSQL.variant(locale: "u.locale", tags: content.variants.keys.sorted()))
                FROM jsonb_to_recordset(\(overrides)) AS o(id text, data jsonb, push_title text, push_body text)
                JOIN users u ON u.id = o.id
                WHERE r.user_key = u.key AND r.channel_key = \(channelKey) AND r.notification_id = \(id)
                """
            )
            let variablesJSON = try PostgresJSONB(utf8: Array(JSONEncoder().encode(variables)))
            let data = try PostgresJSONB(utf8: Array(JSONEncoder().encode(content.shared.data)))
            let actions = try PostgresJSONB(utf8: Array(JSONEncoder().encode(content.shared.actions)))
            // Copies keep the variant their user's locale chose when they were written.
            let variants = try TranslationSQL.variantsJSON(content.variants)
            try await connection.query(
                """
                UPDATE notifications SET variables = \(variablesJSON), data = \(data), push_title = \(content.shared.pushTitle),
                    push_body = \(content.shared.pushBody), actions = \(actions), variants = \(variants), updated_at = now()
                WHERE id = \(id)
                """
            )
            if try await connection.query("SELECT renders_per_recipient FROM notifications WHERE id = \(id)")[0].decode(Bool.self) {
                try await Self.rerenderCopies(
                    notification: id,
                    channelKey: channelKey,
                    except: content.perUser.keys.sorted(),
                    render: try await Self.recipientRenderer(notification: id, on: connection),
                    on: connection
                )
            }
            try await PushStore.enqueue(notification: id, channelKey: channelKey, change: .updated, on: connection)
            return try await Self.fetch(id, on: connection)
        }
    }

    /// Deletes the notification for every recipient: each copy becomes a tombstone with a new change
    /// position (collections report it as deleted), and an unfinished fan-out stops. False when there
    /// was no such notification.
    public func delete(_ id: Int64) async throws -> Bool {
        try await client.withRetryingTransaction { connection in
            guard let locked = try await Self.lockForChange(id, on: connection, allowRunningFanout: true) else { return false }
            try await Self.remove(id, locked: locked, refreshDevices: true, on: connection)
            return true
        }
    }

    /// Turns the copies of the notification, locked by `lockForChange`, into tombstones and marks it
    /// deleted, in the caller's transaction; every hub hears of it, and with `refreshDevices` the
    /// recipients' devices are made to want a refresh push.
    static func remove(
        _ id: Int64,
        locked: (channelKey: Int64, reachedThrough: Int64, foldedThrough: Int64),
        refreshDevices: Bool,
        on connection: PostgresConnection
    ) async throws {
        let xid = try await Self.currentTransactionID(on: connection)
        // Counters: a copy counted in its user's state (targets, broadcast copies made at send
        // time that the fan-out has not passed, and broadcast copies already folded into the
        // state) leaves it if unread; a broadcast copy the fan-out reached but the folding has not
        // stops being counted by the channel's broadcast count, so if its user had already read or
        // removed it (and was counted down then), that is given back.
        try await connection.query(
            """
            UPDATE channel_states s SET unread_adjustment = s.unread_adjustment + d.delta
            FROM (
                SELECT r.user_key, r.channel_key,
                    CASE WHEN r.user_key > \(locked.foldedThrough) AND r.user_key <= \(locked.reachedThrough)
                        THEN CASE WHEN r.status < \(CollectionItem.Status.read) AND NOT r.deleted THEN 0 ELSE 1 END
                        ELSE CASE WHEN r.status < \(CollectionItem.Status.read) AND NOT r.deleted THEN -1 ELSE 0 END
                    END AS delta
                FROM notification_recipients r WHERE r.notification_id = \(id)
            ) AS d
            WHERE d.delta <> 0 AND s.user_key = d.user_key AND s.channel_key = d.channel_key
            """
        )
        try await connection.query(
            """
            UPDATE notification_recipients SET change_xid = \(xid), deleted = true, data = NULL, push_title = NULL, push_body = NULL
            WHERE notification_id = \(id) AND NOT deleted
            """
        )
        try await connection.query(
            "UPDATE notifications SET deleted_at = now(), updated_at = now(), fanout_state = 'done' WHERE id = \(id)"
        )
        if refreshDevices {
            try await PushStore.enqueue(notification: id, channelKey: locked.channelKey, change: .deleted, on: connection)
        } else {
            try await connection.query(LiveHint.notificationQuery(.deleted, id: id, channelKey: locked.channelKey))
        }
    }

    /// Locks a live notification against concurrent changes, fan-out and folding batches; returns its
    /// channel key and, for a broadcast, the last user keys its fan-out has reached and its folding has
    /// passed (0 for targeted sends).
    static func lockForChange(
        _ id: Int64,
        on connection: PostgresConnection,
        allowRunningFanout: Bool = false
    ) async throws -> (channelKey: Int64, reachedThrough: Int64, foldedThrough: Int64)? {
        guard
            let row = try await connection.query(
                """
                SELECT channel_key, fanout_state, audience, fanout_after, folded_through, batch_key FROM notifications
                WHERE id = \(id) AND deleted_at IS NULL FOR UPDATE
                """
            ).first
        else { return nil }
        let (channelKey, state, audience, fanoutAfter, foldedThrough) = try row.decode((Int64, String, String, Int64, Int64).self)
        // A batched send's digest lock too, which every fold takes: a change waits for a fold of the
        // same key under way, and then counts the copies as the fold left them. After the row, as a
        // fan-out batch takes them (no fold locks a digest's own row).
        if let key = try row.decode(column: 5, as: String?.self) { try await Self.lockDigests(channelKey: channelKey, key: key, on: connection) }
        if state == "running", !allowRunningFanout { throw NotificationStoreError.fanoutInProgress }
        return audience == "targets" ? (channelKey, 0, 0) : (channelKey, fanoutAfter, foldedThrough)
    }
}
