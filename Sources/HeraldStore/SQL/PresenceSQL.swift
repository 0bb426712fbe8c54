import HeraldCore
import Postgres

/// Presence, as an SQL condition that the push outboxes' claims inline.
enum PresenceSQL {
    /// True when a live stream (one on a node whose heartbeat has not expired) names the device
    /// (`anyOffline`: devices count one by one) or its user (`allOffline`), given the columns that hold
    /// the device id and the user key.
    static func online(deviceColumn: PostgresQuery, userColumn: PostgresQuery, policy: MultiDevicePolicy) -> PostgresQuery {
        let match: PostgresQuery = policy == .anyOffline ? "c.device_id = \(deviceColumn)" : "c.user_key = \(userColumn)"
        return """
            EXISTS (SELECT 1 FROM stream_connections c JOIN herald_nodes n ON n.id = c.node_id
                WHERE \(match) AND n.expires_at > now())
            """
    }
}
