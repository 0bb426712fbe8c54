import HeraldStore
import Logging
import Metrics
import Postgres
import ServiceLifecycle

/// Removes the rows of erased users, one bounded batch (one short transaction) at a time (see
/// `UserErasureStore`). The jobs live in the database: replicas share them and a restart resumes
/// them. `DELETE /v1/users/{user_id}` wakes the service through `wake`; other replicas' erasures are
/// found by polling every `pollInterval`.
public struct ErasureService: Service {
    let erasures: UserErasureStore
    let executor: PostgresExecutor
    let batchSize: Int
    let grace: Duration
    let wake: WakeSignal
    let pollInterval: Duration
    let logger: Logger

    public init(
        client: PostgresClient,
        batchSize: Int = 1000,
        grace: Duration = .seconds(60),
        wake: WakeSignal,
        pollInterval: Duration = .seconds(2),
        logger: Logger
    ) {
        self.erasures = UserErasureStore(client: client)
        self.executor = client.executor
        self.batchSize = batchSize
        self.grace = grace
        self.wake = wake
        self.pollInterval = pollInterval
        self.logger = logger
    }

    public func run() async throws {
        let removed = Counter(label: "herald_erased_rows_total")
        await withGracefulShutdownHandler {
            await withTaskExecutorPreference(executor) {
                var failures = 0
                while !Task.isShuttingDownGracefully, !Task.isCancelled {
                    do {
                        if let progress = try await erasures.eraseNextBatch(size: batchSize, grace: grace) {
                            failures = 0
                            removed.increment(by: progress.removedRows)
                            if progress.finished {
                                logger.info("user erased", metadata: ["user_key": "\(progress.userKey)"])
                            }
                            // A batch that removed nothing is a job waiting to settle: do not spin on it.
                            if progress.removedRows > 0 || progress.finished { continue }
                        }
                    } catch {
                        failures += 1
                        logger.error("erasure batch failed; retrying", metadata: ["error": logger.describe(error)])
                        try? await Task.sleep(for: FailureBackoff.delay(afterFailures: failures))
                        continue
                    }
                    await wake.wait(timeout: pollInterval)
                }
            }
        } onGracefulShutdown: {
            wake.signal()
        }
    }
}
