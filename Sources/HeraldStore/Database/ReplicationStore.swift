import Postgres

/// What a read standby's probe asks of the two servers: how far the primary has written and which
/// transaction id it issues next, and whether the standby is still replaying and how far it has come.
public struct ReplicationStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// On the primary: where its WAL ends (bytes from the start) and the next transaction id it issues.
    public func primaryPosition() async throws -> (walEnd: Int64, nextXID: Int64) {
        let row = try await client.query(
            """
            SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
                pg_snapshot_xmax(pg_current_snapshot())::text::bigint
            """
        )[0]
        let (end, nextXID) = try row.decode((Int64, Int64).self)
        return (end, nextXID)
    }

    /// On the standby: whether it is in recovery (still a standby), and how far it has replayed (bytes
    /// of WAL from the start; 0 on a server that never replayed).
    public func standbyPosition() async throws -> (recovering: Bool, replayed: Int64) {
        let row = try await client.query(
            "SELECT pg_is_in_recovery(), coalesce(pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0')::bigint, 0)"
        )[0]
        let (recovering, replayed) = try row.decode((Bool, Int64).self)
        return (recovering, replayed)
    }
}
