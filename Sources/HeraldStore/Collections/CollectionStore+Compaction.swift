import Postgres

extension CollectionStore {
    /// What one compaction pass did.
    public struct Compaction: Sendable, Equatable {
        /// Positions below this may have lost their tombstones; tokens below it are no longer live.
        public var compactedThrough: Int64
        public var removedTombstones: Int
        /// Deleted (or expired) notifications whose copies were all gone, removed with their rows.
        public var removedNotifications: Int = 0
    }

    /// Records the current change horizon with the time, then removes the tombstones (deleted copies,
    /// and the channel list's removals of deleted channels) older than `retention`: below the newest
    /// recorded horizon that is older than the retention; then the deleted notifications none of whose
    /// copies remain, with their view and click counts. The new bound is stored first, in a
    /// transaction of its own, so no token below it is ever answered from a history with holes; the
    /// removals follow at most `batchSize` rows per transaction, so a channel that sends for ever
    /// never makes one long delete. Returns `nil` when there is nothing old enough yet.
    public func compact(retention: Duration, batchSize: Int = 10_000) async throws -> Compaction? {
        precondition(batchSize > 0, "a batch removes at least one row")
        let age = TimeSQL.interval(retention)
        let bound = try await client.withRetryingTransaction { connection -> Int64? in
            try await connection.query(
                "INSERT INTO change_horizons (xid) VALUES (pg_snapshot_xmin(pg_current_snapshot())::text::bigint) ON CONFLICT DO NOTHING"
            )
            guard
                let bound = try await connection.query(
                    "SELECT max(xid) FROM change_horizons WHERE recorded_at < now() - \(age)::interval"
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
            try await connection.query("DELETE FROM change_horizons WHERE xid < \(bound)")
            return bound
        }
        guard let bound else { return nil }
        // A user's removed copy of a live broadcast that reached them stays: until the broadcast is
        // folded into their counter it is counted for them per channel, and their copy is what lets a
        // later delete of the broadcast give their count back (see `sql/0006_collections.sql` and
        // `sql/0012_broadcast_folding.sql`). So does one made at send time (per-user variables) that
        // the fan-out has yet to pass: the batch that passes it takes its send-time count back and
        // counts it by its copy. It goes once the broadcast does.
        let tombstones = try await removeInBatches(
            """
            DELETE FROM notification_recipients WHERE ctid = ANY(ARRAY(
                SELECT r.ctid FROM notification_recipients r WHERE r.deleted AND r.change_xid < \(bound)
                    AND NOT EXISTS (
                        SELECT 1 FROM notifications n
                        WHERE n.id = r.notification_id AND n.audience <> 'targets' AND n.deleted_at IS NULL
                            AND (n.fanout_after >= r.user_key OR n.fanout_state = 'running'))
                LIMIT \(batchSize)))
            """,
            batchSize: batchSize
        )
        _ = try await removeInBatches(
            """
            DELETE FROM channel_list_removals WHERE ctid = ANY(ARRAY(
                SELECT ctid FROM channel_list_removals WHERE change_xid < \(bound) LIMIT \(batchSize)))
            """,
            batchSize: batchSize
        )
        // Nothing names a notification whose copies are gone but its view and click counts: the
        // admin API has answered 404 for it since it was deleted.
        let notifications = try await removeInBatches(
            """
            WITH gone AS (
                DELETE FROM notifications WHERE id = ANY(ARRAY(
                    SELECT n.id FROM notifications n
                    WHERE n.deleted_at < now() - \(age)::interval
                        AND NOT EXISTS (SELECT 1 FROM notification_recipients r WHERE r.notification_id = n.id)
                    LIMIT \(batchSize)))
                RETURNING id
            ), events AS (
                DELETE FROM notification_events e USING gone WHERE e.notification_id = gone.id
            )
            SELECT id FROM gone
            """,
            batchSize: batchSize
        )
        return Compaction(compactedThrough: bound, removedTombstones: tombstones, removedNotifications: notifications)
    }

    /// Runs `statement` — which removes at most `batchSize` rows and reports them as affected or
    /// returned rows — until a run removes fewer; returns how many it removed in all.
    private func removeInBatches(_ statement: PostgresQuery, batchSize: Int) async throws -> Int {
        var total = 0
        while true {
            let result = try await client.query(statement)
            let removed = max(result.affectedRows, result.count)
            total += removed
            if removed < batchSize || Task.isCancelled { return total }
        }
    }
}
