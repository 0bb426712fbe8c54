import HeraldStore
import Logging
import Postgres
import ServiceLifecycle

/// Periodic clean-up: idempotency keys past their retention.
public struct HousekeepingService: Service {
    let notifications: NotificationStore
    let interval: Duration
    let logger: Logger

    public init(client: PostgresClient, interval: Duration = .seconds(3600), logger: Logger) {
        self.notifications = NotificationStore(client: client)
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        // Nothing here needs finishing: on shutdown the loop is cancelled wherever it is.
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let removed = try await notifications.deleteExpiredIdempotencyKeys()
                    if removed > 0 { logger.info("removed expired idempotency keys", metadata: ["count": "\(removed)"]) }
                } catch {
                    if Task.isCancelled { return }
                    logger.warning("housekeeping failed", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
