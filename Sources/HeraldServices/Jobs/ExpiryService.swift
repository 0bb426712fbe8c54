import HeraldStore
import Logging
import Metrics
import Postgres
import ServiceLifecycle

/// Deletes expired notifications — past their send's `expires_at` or their channel's retention —
/// every `interval`, one notification per transaction (see `NotificationStore.expireNext`); their
/// tombstones then go with compaction. Replicas may all run it: they skip each other's notifications.
public struct ExpiryService: Service {
    let notifications: NotificationStore
    let interval: Duration
    let logger: Logger

    public init(client: PostgresClient, interval: Duration = .seconds(60), logger: Logger) {
        self.notifications = NotificationStore(client: client)
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        let expired = Counter(label: "herald_expired_notifications_total")
        await PeriodicWork.run(every: interval, name: "expiry", logger: logger) { [notifications, logger] in
            var count = 0
            while !Task.isCancelled, try await notifications.expireNext() != nil {
                count += 1
                expired.increment()
            }
            if count > 0 { logger.info("expired notifications", metadata: ["count": "\(count)"]) }
        }
    }
}
