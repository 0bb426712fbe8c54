import Postgres

/// The SQL of change positions (see `sql/0005_notifications.sql`): a change's position is the id of
/// the transaction that made it, and a snapshot's horizon says which positions are complete.
enum ChangePositionSQL {
    /// This transaction's id, as a change position; assigns the id if the transaction has none yet.
    static let currentTransactionID: PostgresQuery = "pg_current_xact_id()::text::bigint"

    /// Where the statement's snapshot stands among the positions, as three columns: its horizon (every
    /// transaction below it has ended), the next transaction id, and the compaction bound. Read by
    /// `decodeSnapshotPosition`.
    static let snapshotPosition: PostgresQuery = """
        pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS horizon,
        pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next_xid,
        coalesce((SELECT ('x' || encode(value, 'hex'))::bit(64)::bigint FROM herald_settings WHERE name = 'compacted_through'), 0) AS compacted
        """

    /// The columns of `snapshotPosition`, from `column` on; `column` moves past them.
    static func decodeSnapshotPosition(_ row: PostgresRow, at column: inout Int) throws -> (horizon: Int64, nextXID: Int64, compactedThrough: Int64) {
        defer { column += 3 }
        return (
            try row.decode(column: column, as: Int64.self),
            try row.decode(column: column + 1, as: Int64.self),
            try row.decode(column: column + 2, as: Int64.self)
        )
    }
}
