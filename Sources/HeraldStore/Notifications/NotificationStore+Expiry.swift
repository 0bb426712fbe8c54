import Postgres

extension NotificationStore {
    /// Deletes the next expired notification — past its send's `expires_at`, or older than its
    /// channel's retention — as `delete` would, in one transaction of its own; returns its id, or
    /// `nil` when none is due. Expiry is not news: the recipients' devices get no refresh push for it
    /// (a channel that sends steadily would otherwise push every recipient once more per send); open
    /// streams hear of it at once, and every other client at its next sync.
    ///
    /// Notifications other workers hold are skipped (`SKIP LOCKED`), so replicas share the work.
    public func expireNext() async throws -> Int64? {
        try await client.withRetryingTransaction { connection in
            var id = try await connection.query(
                """
                SELECT id FROM notifications WHERE deleted_at IS NULL AND expires_at <= now()
                ORDER BY expires_at LIMIT 1 FOR UPDATE SKIP LOCKED
                """
            ).first?.decode(Int64.self)
            if id == nil {
                id = try await connection.query(
                    """
                    SELECT n.id FROM channels c CROSS JOIN LATERAL (
                        SELECT id FROM notifications n
                        WHERE n.channel_key = c.key AND n.deleted_at IS NULL AND n.created_at <= now() - c.retention_seconds * interval '1 second'
                        ORDER BY n.created_at LIMIT 1 FOR UPDATE SKIP LOCKED
                    ) AS n
                    WHERE c.retention_seconds IS NOT NULL LIMIT 1
                    """
                ).first?.decode(Int64.self)
            }
            guard let id, let locked = try await Self.lockForChange(id, on: connection, allowRunningFanout: true) else { return nil }
            try await Self.remove(id, locked: locked, refreshDevices: false, on: connection)
            return id
        }
    }
}
