import Foundation
import HeraldServices
import HeraldStore
import Logging
import Postgres
import ServiceLifecycle

/// Runs the `Scheduler`: makes what is due, then waits until the next send can be claimed (or a
/// digest's alert is due), a new schedule wakes it, or `pollInterval` passes (other replicas' schedules are found so). Replicas
/// may all run it; schedules live in the database, so a restart loses none.
struct SchedulerService: Service {
    let scheduler: Scheduler
    let executor: PostgresExecutor
    let wake: WakeSignal
    var pollInterval: Duration = .seconds(1)
    let logger: Logger

    func run() async throws {
        await withGracefulShutdownHandler {
            // The loop issues statement after statement: run it where libpq runs.
            await withTaskExecutorPreference(executor) {
                var failures = 0
                while !Task.isShuttingDownGracefully, !Task.isCancelled {
                    do {
                        if try await scheduler.runRound(now: Date()) >= scheduler.batchSize { continue }
                        failures = 0
                        let nextSend = try await scheduler.schedules.nextClaimable()
                        let nextAlert = try await scheduler.notifications.notifications.nextDigestAlert()
                        let next = [nextSend, nextAlert].compactMap(\.self).min()
                        let wait = next.map { min(pollInterval, .milliseconds(max(0, Int64($0.timeIntervalSinceNow * 1000)))) } ?? pollInterval
                        if wait > .zero { await wake.wait(timeout: wait) }
                    } catch {
                        failures += 1
                        logger.error("scheduler round failed; retrying", metadata: ["error": logger.describe(error)])
                        try? await Task.sleep(for: FailureBackoff.delay(afterFailures: failures))
                    }
                }
            }
        } onGracefulShutdown: {
            wake.signal()
        }
    }
}
