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
        await PeriodicWork.run(every: interval, name: "housekeeping", logger: logger) { [notifications, logger] in
            let removed = try await notifications.deleteExpiredIdempotencyKeys()
            if removed > 0 { logger.info("removed expired idempotency keys", metadata: ["count": "\(removed)"]) }
        }
    }
}
