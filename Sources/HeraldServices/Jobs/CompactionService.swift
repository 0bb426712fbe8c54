import HeraldStore
import Logging
import Postgres
import ServiceLifecycle

/// Removes change history older than the retention, periodically (see `CollectionStore.compact`).
/// Replicas may all run it: each pass is one transaction, and passes are idempotent.
public struct CompactionService: Service {
    let collections: CollectionStore
    let retention: Duration
    let interval: Duration
    let logger: Logger

    public init(client: PostgresClient, retention: Duration, interval: Duration = .seconds(600), logger: Logger) {
        self.collections = CollectionStore(client: client)
        self.retention = retention
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await PeriodicWork.run(every: interval, name: "compaction", logger: logger) { [collections, retention, logger] in
            if let pass = try await collections.compact(retention: retention), pass.removedTombstones > 0 {
                logger.info("compacted change history", metadata: ["removed_tombstones": "\(pass.removedTombstones)"])
            }
        }
    }
}
