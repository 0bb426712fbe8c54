import HeraldStore
import Logging
import Metrics
import Postgres
import ServiceLifecycle

/// Reaches every user for `audience: "all"` notifications, one batch (one short transaction) at a time;
/// when no fan-out waits, folds finished broadcasts into their users' counters the same way (see
/// `NotificationStore.foldNextBatch`), so that per-request unread counts never see more than the
/// broadcasts still in flight.
///
/// Progress lives in the database, so several replicas can run this side by side (they skip each
/// other's locked notifications) and a restart resumes where the last committed batch ended. A send
/// wakes the service through `wake`; other replicas' sends are found by polling every `pollInterval`.
public struct FanoutService: Service {
    let notifications: NotificationStore
    let executor: PostgresExecutor
    let batchSize: Int
    let wake: WakeSignal
    let pollInterval: Duration
    let logger: Logger

    public init(client: PostgresClient, batchSize: Int, wake: WakeSignal, pollInterval: Duration = .seconds(1), logger: Logger) {
        self.notifications = NotificationStore(client: client)
        self.executor = client.executor
        self.batchSize = batchSize
        self.wake = wake
        self.pollInterval = pollInterval
        self.logger = logger
    }

    public func run() async throws {
        let recipients = Counter(label: "herald_fanout_recipients_total")
        let folded = Counter(label: "herald_fold_users_total")
        await withGracefulShutdownHandler {
            // The loop issues statement after statement: run it where libpq runs.
            await withTaskExecutorPreference(executor) {
                var failures = 0
                while !Task.isShuttingDownGracefully, !Task.isCancelled {
                    do {
                        if let progress = try await notifications.fanOutNextBatch(size: batchSize) {
                            failures = 0
                            recipients.increment(by: progress.inserted)
                            if progress.dropped > 0 { ThrottleMetrics.droppedCopies.increment(by: progress.dropped) }
                            if progress.finished {
                                logger.info("fan-out finished", metadata: ["notification_id": "\(progress.notificationID)"])
                            }
                            continue
                        }
                        if let progress = try await notifications.foldNextBatch(size: batchSize) {
                            failures = 0
                            folded.increment(by: progress.users)
                            if progress.finished {
                                logger.debug("broadcast folded into counters", metadata: ["notification_id": "\(progress.notificationID)"])
                            }
                            continue
                        }
                    } catch {
                        failures += 1
                        logger.error("fan-out or folding batch failed; retrying", metadata: ["error": logger.describe(error)])
                        try? await Task.sleep(for: FailureBackoff.delay(afterFailures: failures))
                        continue
                    }
                    await wake.wait(timeout: pollInterval)
                }
            }
        } onGracefulShutdown: {
            // Ends the wait; a batch in progress finishes and commits first.
            wake.signal()
        }
    }
}
