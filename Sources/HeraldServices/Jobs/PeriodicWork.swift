import Logging
import Postgres
import ServiceLifecycle

/// The loop of a periodic background service: `work`, then wait `interval`, until graceful shutdown.
/// Nothing in such work needs finishing, so shutdown cancels it wherever it is; a failed pass is
/// logged and the next one runs on schedule.
enum PeriodicWork {
    static func run(every interval: Duration, name: String, logger: Logger, _ work: @escaping @Sendable () async throws -> Void) async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await work()
                } catch {
                    if Task.isCancelled { return }
                    logger.warning("\(name) failed", metadata: ["error": logger.describe(error)])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
