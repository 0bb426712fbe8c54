import Foundation
import HeraldCore
import Postgres

/// Why pressing an action was refused.
public enum ActionError: Error, Sendable, Equatable {
    /// The user has no live copy of the notification.
    case notificationNotFound
    /// The notification offers no action with that id.
    case actionNotFound
}

extension CollectionStore {
    /// Records that the user pressed the notification's action `actionID`: the copy remembers it
    /// (`actions_done`) with a new change position, so every device's sync and stream learn of it;
    /// the first press of any action counts the user among those who acted, and each first press of
    /// an action raises `notification.action`. Pressing one already pressed changes nothing. Returns
    /// the channel's URL, its state after, and the change's position.
    public func pressAction(
        userKey: Int64,
        notificationID id: Int64,
        actionID: String
    ) async throws -> (channelURL: String, state: ChannelState, position: Int64) {
        try await client.withRetryingTransaction { connection in
            guard
                let found = try await connection.query(
                    """
                    SELECT r.channel_key, c.url, n.actions @> jsonb_build_array(jsonb_build_object('id', \(actionID)::text))
                    FROM notification_recipients r JOIN notifications n ON n.id = r.notification_id AND n.channel_key = r.channel_key
                    JOIN channels c ON c.key = n.channel_key
                    WHERE r.user_key = \(userKey) AND r.notification_id = \(id) AND NOT r.deleted AND n.deleted_at IS NULL
                    FOR UPDATE OF r
                    """
                ).first
            else { throw ActionError.notificationNotFound }
            let (channelKey, url, offered) = try found.decode((Int64, String, Bool).self)
            guard offered else { throw ActionError.actionNotFound }
            let pressed = try await connection.query(
                """
                UPDATE notification_recipients SET actions_done = coalesce(actions_done, '{}') || \(actionID)::text,
                    change_xid = \(ChangePositionSQL.currentTransactionID)
                WHERE user_key = \(userKey) AND channel_key = \(channelKey) AND notification_id = \(id)
                    AND NOT (\(actionID)::text = ANY(coalesce(actions_done, '{}')))
                """
            ).affectedRows
            if pressed > 0 {
                try await connection.query(
                    """
                    INSERT INTO notification_events AS e (notification_id, kind, user_key) VALUES (\(id), \(NotificationEventKind.acted.rawValue), \(userKey))
                    ON CONFLICT (notification_id, kind, user_key) DO UPDATE SET count = e.count + 1, last_at = now()
                    """
                )
                try await connection.query(
                    """
                    SELECT herald_webhook_event('notification.action', jsonb_build_object('notification_id', \(id)::text,
                        'channel_url', \(url)::text, 'user_id', u.id, 'action_id', \(actionID)::text, 'at', \(TimeSQL.rfc3339("now()"))))
                    FROM users u WHERE u.key = \(userKey) AND herald_webhook_wanted('notification.action')
                    """
                )
                try await connection.query(LiveHint.channelState(userKey: userKey, channelKey: channelKey).query)
            }
            // A broadcast's copy may come before its user's first state in the channel (the folding
            // makes it): make it, so that there is one to read.
            try await connection.query(
                "INSERT INTO channel_states (user_key, channel_key) VALUES (\(userKey), \(channelKey)) ON CONFLICT (user_key, channel_key) DO NOTHING"
            )
            let state = try Self.decodeState(try await connection.query(Self.stateQuery(userKey: userKey, channelKey: channelKey))[0])
            return (url, state.state, state.position)
        }
    }
}
