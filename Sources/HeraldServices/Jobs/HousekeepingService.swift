import HeraldStore
import Logging
import Postgres
import ServiceLifecycle

/// Periodic clean-up: idempotency keys past their retention, expired sessions and console sign-ins,
/// and the records of erasures and scheduled sends that finished long ago.
public struct HousekeepingService: Service {
    let notifications: NotificationStore
    let sessions: SessionStore
    let erasures: UserErasureStore
    let consoleSessions: ConsoleSessionStore
    let schedules: ScheduleStore
    let interval: Duration
    let logger: Logger

    public init(client: PostgresClient, interval: Duration = .seconds(3600), logger: Logger) {
        self.notifications = NotificationStore(client: client)
        self.sessions = SessionStore(client: client)
        self.erasures = UserErasureStore(client: client)
        self.consoleSessions = ConsoleSessionStore(client: client)
        self.schedules = ScheduleStore(client: client)
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await PeriodicWork.run(every: interval, name: "housekeeping", logger: logger) {
            [notifications, sessions, erasures, consoleSessions, schedules, logger] in
            let removed = try await notifications.deleteExpiredIdempotencyKeys()
            if removed > 0 { logger.info("removed expired idempotency keys", metadata: ["count": "\(removed)"]) }
            let expired = try await sessions.deleteExpired()
            if expired > 0 { logger.info("removed expired sessions", metadata: ["count": "\(expired)"]) }
            _ = try await consoleSessions.deleteExpired()
            try await erasures.deleteOldRecords()
            let finished = try await schedules.deleteFinished()
            if finished > 0 { logger.info("removed scheduled sends finished long ago", metadata: ["count": "\(finished)"]) }
        }
    }
}
