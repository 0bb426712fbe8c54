import Foundation
import NIOPosix

extension PostgresCluster {
    /// Makes this cluster, not yet created, a hot standby of `primary`: a base backup taken with
    /// `pg_basebackup -R` (which writes `standby.signal` and the `primary_conninfo` to stream from), so
    /// that once started it replays the primary's WAL as it streams in and answers read-only queries.
    /// The primary must be running; its default settings (`wal_level = replica`, WAL senders, the local
    /// `replication` line `initdb` writes to `pg_hba.conf`) allow it. Blocks.
    public func createStandbyBlocking(of primary: PostgresCluster) throws {
        guard !isInitialized else { throw ClusterError(message: "\(directory) holds a cluster already; a standby starts empty") }
        try prepareDirectories()
        let outcome = try run(
            [
                binDirectory + "/pg_basebackup", "--pgdata", dataDirectory, "--write-recovery-conf", "--wal-method", "stream",
                "--checkpoint", "fast", "--dbname", primary.conninfo(),
            ],
            as: runAs
        )
        guard outcome.status == 0 else { throw ClusterError(message: "pg_basebackup failed: \(outcome.output)") }
    }

    /// `createStandbyBlocking(of:)` off the caller's thread.
    public func createStandby(of primary: PostgresCluster) async throws {
        try await NIOThreadPool.singleton.runIfActive { try createStandbyBlocking(of: primary) }
    }
}
