import Postgres

extension CollectionStore {
    /// What one compaction pass did.
    public struct Compaction: Sendable, Equatable {
        /// Positions below this may have lost their tombstones; tokens below it are no longer live.
        public var compactedThrough: Int64
        public var removedTombstones: Int
    }

    /// Records the current change horizon with the time, then removes the tombstones (deleted copies,
    /// and the channel list's removals of deleted channels) older than `retention`: below the newest
    /// recorded horizon that is older than the retention. The new bound is stored in the same
    /// transaction, so no token below it is ever answered from a history with holes. Returns `nil`
    /// when there is nothing old enough yet.
    public func compact(retention: Duration) async throws -> Compaction? {
        try await client.withRetryingTransaction { connection in
            try await connection.query(
                "INSERT INTO change_horizons (xid) VALUES (pg_snapshot_xmin(pg_current_snapshot())::text::bigint) ON CONFLICT DO NOTHING"
            )
            let seconds = Double(retention.components.seconds) + Double(retention.components.attoseconds) / 1e18
            guard
                let bound = try await connection.query(
                    "SELECT max(xid) FROM change_horizons WHERE recorded_at < now() - make_interval(secs => \(seconds))"
                ).first?.decode(Int64?.self)
            else { return nil }
            var encoded: [UInt8] = []
            withUnsafeBytes(of: bound.bigEndian) { encoded.append(contentsOf: $0) }
            try await connection.query(
                """
                INSERT INTO herald_settings (name, value) VALUES ('compacted_through', \(PostgresBytes(encoded)))
                ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
                """
            )
            // A user's removed copy of a live broadcast that reached them stays: until the broadcast is
            // folded into their counter it is counted for them per channel, and their copy is what lets
            // a later delete of the broadcast give their count back (see `sql/0006_collections.sql` and
            // `sql/0012_broadcast_folding.sql`). It goes once the broadcast does.
            let removed = try await connection.query(
                """
                DELETE FROM notification_recipients r WHERE r.deleted AND r.change_xid < \(bound)
                    AND NOT EXISTS (
                        SELECT 1 FROM notifications n
                        WHERE n.id = r.notification_id AND n.audience = 'all' AND n.deleted_at IS NULL AND n.fanout_after >= r.user_key)
                """
            ).affectedRows
            try await connection.query("DELETE FROM channel_list_removals WHERE change_xid < \(bound)")
            try await connection.query("DELETE FROM change_horizons WHERE xid < \(bound)")
            return Compaction(compactedThrough: bound, removedTombstones: removed)
        }
    }
}
