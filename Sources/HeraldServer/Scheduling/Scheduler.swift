import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import Logging
import Metrics
import Postgres

/// Makes scheduled sends when they are due: claims them (a lease, so replicas share the work and a
/// dead worker's claims pass to another), sends each due part through the same path as
/// `POST /v1/notifications`, and records it. Each part's send carries an idempotency key of its
/// own: a worker that dies between the send and the record leaves the part to the next, whose send
/// is answered by the first — each part is sent once.
///
/// Time comes from the caller of `runRound(now:)`, so tests drive it with a clock they control.
struct Scheduler: Sendable {
    let schedules: ScheduleStore
    let notifications: NotificationsController
    let logger: Logger
    /// How long a claim holds before another worker may take the send.
    var lease: Duration = .seconds(60)
    /// Sends claimed at once, and made side by side.
    var batchSize = 200
    var concurrency = 8

    static let fired = Counter(label: "herald_scheduled_sends_total")
    static let refused = Counter(label: "herald_scheduled_sends_failed_total")

    /// Claims what is due at `now` and makes it. Returns how many sends it claimed: a full batch
    /// means more may be due.
    /// Digests whose alert goes at the end of their window get it queued here too: their windows
    /// close on the same clock.
    @discardableResult
    func runRound(now: Date) async throws -> Int {
        _ = try await notifications.notifications.queueDigestAlerts(now: now)
        let due = try await schedules.claimDue(now: now, limit: batchSize, lease: lease)
        await withTaskGroup(of: Void.self) { group in
            var started = 0
            for schedule in due {
                if started >= concurrency { await group.next() }
                group.addTask { await fire(schedule, now: now) }
                started += 1
            }
        }
        return due.count
    }

    /// Makes the part of `schedule` that is due at `now`, and records it. A failure that may pass
    /// releases the claim for a later round; a refusal (the template or channel gone) fails the
    /// schedule with the reason.
    func fire(_ schedule: ScheduledSend, now: Date) async {
        do {
            let (progress, nextTiming, nextOccurrence) = try await part(of: schedule, now: now)
            if case .refused(let reason) = progress {
                Self.refused.increment()
                logger.warning("scheduled send refused", metadata: ["scheduled_send_id": "\(schedule.id)", "reason": "\(reason)"])
            }
            try await schedules.record(schedule, progress, nextTiming: nextTiming, nextOccurrenceAt: nextOccurrence)
        } catch NotificationStoreError.fenceLost {
            // Cancelled, or its lease ran out and another worker holds it: nothing was sent here.
            logger.info("scheduled send no longer held; left alone", metadata: ["scheduled_send_id": "\(schedule.id)"])
        } catch {
            logger.warning("scheduled send failed; retrying", metadata: ["scheduled_send_id": "\(schedule.id)", "error": logger.describe(error)])
            try? await schedules.release(schedule, retryAt: now.addingTimeInterval(30), error: "\(error)")
        }
    }

    /// The idempotency keys of scheduled sends begin so; clients may not use such keys.
    static let keyPrefix = "schedule:"

    func part(
        of schedule: ScheduledSend,
        now: Date
    ) async throws -> (
        ScheduleStore.Progress, nextTiming: ScheduledSend.Timing?, nextOccurrenceAt: Date?
    ) {
        let body: SendNotificationRequest
        let audience: Audience
        do {
            body = try RequestBody.decode(SendNotificationRequest.self, from: Data(schedule.request))
            audience = try body.validate(now: now).audience
        } catch let error as APIError {
            return (.refused(reason: error.message), nil, nil)
        }
        // The next occurrence of a repeating schedule, once this one is done: the first still ahead,
        // so that occurrences missed while nothing ran (an outage) are skipped, not sent in a burst.
        func next(_ timing: ScheduledSend.Timing) -> (ScheduledSend.Timing?, Date?) {
            guard let repeats = schedule.repeats else { return (nil, nil) }
            var timing = timing
            while true {
                switch timing {
                case .at(let instant):
                    let moved = instant.addingTimeInterval(TimeInterval(repeats.days * 86_400))
                    timing = .at(moved)
                    if moved > now { return (timing, moved) }
                case .local(let time):
                    let moved = time.adding(days: repeats.days)
                    timing = .local(moved)
                    // Due first where the day begins; once it has passed in the last zone it is missed.
                    if moved.instant(in: LocalDateTime.lastZone) > now { return (timing, moved.instant(in: LocalDateTime.firstZone)) }
                }
            }
        }
        let key = "\(Self.keyPrefix)\(schedule.id):\(schedule.occurrence):\(schedule.parts)"
        // Sent only while this worker's claim holds: a cancellation, or another worker taking over
        // after the lease, waits for the send or stops it.
        let fence = ScheduleStore.fence(schedule)
        switch schedule.timing {
        case .at:
            let (nextTiming, nextAt) = next(schedule.timing)
            switch try await send(body, key: key, zones: nil, fence: fence, now: now) {
            case .success(let (id, _)): return (.sent(notificationID: id, zones: [], nextAt: nil), nextTiming, nextAt)
            case .failure(let refusal): return (.refused(reason: refusal.message), nil, nil)
            }
        case .local(let time):
            // The zones of the users the send reaches now that this occurrence has not reached yet,
            // each with the instant it is `time` there.
            let zones = try await schedules.timeZones(of: audience).filter { !schedule.zonesDone.contains($0) }
            let instants = zones.compactMap { zone in TimeZone(identifier: zone).map { (zone, time.instant(in: $0)) } }
            let due = instants.filter { $0.1 <= now }.map(\.0)
            let later = instants.filter { $0.1 > now }.map(\.1).min()
            let (nextTiming, nextAt) = later == nil ? next(schedule.timing) : (nil, nil)
            guard !due.isEmpty else { return (.notDue(nextAt: later), nextTiming, nextAt) }
            switch try await send(body, key: key, zones: due, fence: fence, now: now) {
            case .success(let (id, sentZones)):
                // A part sent before a worker died reached the zones it was made for: only those are
                // done; any that became due since go in the next part, due now.
                let done = sentZones ?? due
                let rest = due.filter { !done.contains($0) }
                let nextDue = rest.isEmpty ? later : now
                let (partTiming, partNext) = nextDue == nil ? next(schedule.timing) : (nil, nil)
                return (.sent(notificationID: id, zones: done, nextAt: nextDue), partTiming, partNext)
            case .failure(let refusal): return (.refused(reason: refusal.message), nil, nil)
            }
        }
    }

    struct Refusal: Error {
        var message: String
    }

    /// Sends one part with its idempotency key: the notification's id and the time zones it was
    /// made for (those of the first send, when it was made before), or why it was refused.
    func send(
        _ body: SendNotificationRequest,
        key: String,
        zones: [String]?,
        fence: PostgresQuery,
        now: Date
    ) async throws -> Result<(Int64, [String]?), Refusal> {
        // The key alone names the part: an erasure may have taken a user out of the request since its
        // first send, and the retry must still be answered by that send.
        let idempotency = IdempotencyKey(key: key, requestHash: SHA256.digest(Array(key.utf8)), filedUnderUsers: false)
        let outcome: NotificationStore.SendOutcome
        do {
            outcome = try await notifications.send(body, idempotency: idempotency, timeZones: zones, fence: fence, now: now)
        } catch let error as APIError where error.status.code < 500 {
            return .failure(Refusal(message: error.message))
        }
        Self.fired.increment()
        switch outcome {
        case .created(let stored, _, _):
            return .success((stored.id, zones))
        case .replayed(let response):
            // The part was sent before a worker died; its first answer names the notification.
            let first = try JSONDecoder().decode([String: JSONValue].self, from: Data(response.body))
            guard case .string(let text)? = first["id"], let id = Int64(text) else {
                return .failure(Refusal(message: "the part's first send was refused"))
            }
            return .success((id, try await schedules.timeZones(ofNotification: id)))
        case .keyReused:
            return .failure(Refusal(message: "idempotency key \(key) was used by another request"))
        }
    }
}
