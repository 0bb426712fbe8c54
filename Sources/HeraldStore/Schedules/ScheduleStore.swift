import Foundation
import HeraldCore
import Postgres

/// Scheduled sends (`sql/0030_scheduled_sends.sql`): stored, listed, cancelled, and claimed when due.
/// Every statement that compares with the time takes it from the caller, whose clock tests control.
public struct ScheduleStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// What storing a scheduled send answered.
    public enum CreateOutcome: Sendable {
        /// Stored now; `response` is what `respond` made of it (and what a retry will get).
        case created(ScheduledSend, response: StoredResponse)
        /// The idempotency key was used before with the same request: the first response.
        case replayed(StoredResponse)
        /// The idempotency key was used before with a different request.
        case keyReused

        /// What a key already used answers (idempotency records are shared with sends).
        init(_ previous: NotificationStore.SendOutcome) {
            if case .replayed(let response) = previous { self = .replayed(response) } else { self = .keyReused }
        }
    }

    /// What a scheduling with this key must answer without doing anything: the first response (same
    /// request) or `keyReused`; `nil` when the key is new.
    public func previousOutcome(for idempotency: IdempotencyKey) async throws -> CreateOutcome? {
        try await NotificationStore(client: client).previousOutcome(for: idempotency).map(CreateOutcome.init)
    }

    /// Stores a scheduled send, due first at `nextAt`. With an idempotency key, the key is claimed in
    /// the same transaction and keeps the response `respond` makes (naming `userIDs`, for an erasure):
    /// a retried request schedules nothing more and gets the first answer.
    public func create(
        request: [UInt8],
        channelURL: String,
        templateKey: String,
        audience: String,
        timing: ScheduledSend.Timing,
        repeats: ScheduledSend.Repeat?,
        nextAt: Date,
        idempotency: IdempotencyKey? = nil,
        userIDs: [String] = [],
        respond: @escaping @Sendable (ScheduledSend) throws -> StoredResponse
    ) async throws -> CreateOutcome {
        let (sendAt, localTime) = Self.columns(timing)
        return try await client.withRetryingTransaction { connection in
            if let idempotency, let previous = try await NotificationStore.claim(idempotency, on: connection) {
                return CreateOutcome(previous)
            }
            let row = try await connection.query(
                """
                INSERT INTO scheduled_sends (request, channel_url, template_key, audience, send_at, local_time, repeat, next_at)
                VALUES (\(PostgresJSONB(utf8: request)), \(channelURL), \(templateKey), \(audience), \(sendAt), \(localTime),
                    \(repeats?.rawValue), \(PostgresTimestamp(nextAt)))
                RETURNING \(Self.columns)
                """
            )[0]
            let stored = try Self.decode(row)
            let response = try respond(stored)
            if let idempotency { try await NotificationStore.keep(response, for: idempotency, userIDs: userIDs, on: connection) }
            return .created(stored, response: response)
        }
    }

    public func get(_ id: Int64) async throws -> ScheduledSend? {
        try await client.query("SELECT \(Self.columns) FROM scheduled_sends WHERE id = \(id)").first.map(Self.decode)
    }

    /// How long a finished scheduled send (sent, cancelled or failed) is kept for listing after its
    /// last change. Its notifications live on under their channel's retention; its row is only history.
    public static let finishedRetention: Duration = .seconds(30 * 24 * 3600)

    /// Removes the scheduled sends that finished longer ago than `age`; returns how many.
    @discardableResult
    public func deleteFinished(olderThan age: Duration = Self.finishedRetention) async throws -> Int {
        try await client.query(
            "DELETE FROM scheduled_sends WHERE state <> 'scheduled' AND updated_at < now() - \(TimeSQL.interval(age))::interval"
        ).affectedRows
    }

    /// Scheduled sends in id order after `after`, of one state or all.
    public func list(state: ScheduledSend.State?, after: Int64?, limit: Int) async throws -> [ScheduledSend] {
        try await client.query(
            """
            SELECT \(Self.columns) FROM scheduled_sends
            WHERE id > \(after ?? 0) AND (\(state?.rawValue)::text IS NULL OR state = \(state?.rawValue))
            ORDER BY id LIMIT \(limit)
            """
        ).map(Self.decode)
    }

    /// What a cancellation found.
    public enum Cancellation: Sendable {
        case canceled(ScheduledSend)
        /// It is no longer waiting: sent, failed or cancelled before.
        case finished(ScheduledSend)
        /// A worker is making its send at this moment; once it has, the rest can be cancelled.
        case sending(ScheduledSend)
        case notFound
    }

    /// Cancels what has not been sent yet (the remaining zones of a local time, the repetitions). A
    /// send a worker holds (its lease runs at `now`) is not cancelled: it may already be made.
    public func cancel(_ id: Int64, now: Date) async throws -> Cancellation {
        try await client.withTransaction { connection in
            guard let row = try await connection.query("SELECT \(Self.columns) FROM scheduled_sends WHERE id = \(id) FOR UPDATE").first else {
                return .notFound
            }
            let found = try Self.decode(row)
            guard found.state == .scheduled else { return .finished(found) }
            let claimed = try await connection.query(
                "SELECT claimed_until > \(PostgresTimestamp(now)) FROM scheduled_sends WHERE id = \(id)"
            )[0].decode(Bool?.self)
            if claimed == true { return .sending(found) }
            let updated = try await connection.query(
                "UPDATE scheduled_sends SET state = 'canceled', updated_at = now() WHERE id = \(id) RETURNING \(Self.columns)"
            )[0]
            return .canceled(try Self.decode(updated))
        }
    }

    /// Claims up to `limit` due sends that no live lease holds, for `lease` from `now`, earliest first.
    /// Replicas skip each other's rows.
    public func claimDue(now: Date, limit: Int, lease: Duration) async throws -> [ScheduledSend] {
        let at = PostgresTimestamp(now)
        let until = PostgresTimestamp(now.addingTimeInterval(Double(lease.components.seconds)))
        return try await client.query(
            """
            WITH due AS (
                SELECT id FROM scheduled_sends
                WHERE state = 'scheduled' AND next_at <= \(at) AND (claimed_until IS NULL OR claimed_until <= \(at))
                ORDER BY next_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            UPDATE scheduled_sends s SET claimed_until = \(until), attempts = s.attempts + 1
            FROM due WHERE s.id = due.id
            RETURNING \(Self.columns("s"))
            """
        ).map(Self.decode).sorted { $0.nextAt < $1.nextAt }
    }

    /// The time zones of the users `audience` reaches now.
    public func timeZones(of audience: Audience) async throws -> [String] {
        let query: PostgresQuery
        switch audience {
        case .targets(let ids): query = "SELECT DISTINCT time_zone FROM users WHERE id = ANY(\(ids))"
        case .all: query = "SELECT DISTINCT time_zone FROM users"
        case .topic(let topic):
            query = """
                SELECT DISTINCT u.time_zone FROM topics t JOIN topic_subscriptions s ON s.topic_key = t.key AND NOT s.muted
                JOIN users u ON u.key = s.user_key WHERE t.id = \(topic)
                """
        }
        return try await client.query(query).map { try $0.decode(String.self) }.sorted()
    }

    /// What a worker made of a claimed send.
    public enum Progress: Sendable {
        /// A part was sent (its notification, when it reached anyone), reaching `zones` of a local
        /// time; the schedule is next due at `nextAt`, or its occurrence is done (`nil`).
        case sent(notificationID: Int64?, zones: [String], nextAt: Date?)
        /// Nothing was due after all (a local time whose due zones have no users left): next due then.
        case notDue(nextAt: Date?)
        /// The send was refused: the schedule fails with `reason`.
        case refused(reason: String)
    }

    /// Records a worker's progress and lets go of its claim. A finished occurrence of a repeating
    /// schedule becomes the next one (`timing` moved by its period), due at `nextOccurrenceAt`.
    ///
    /// Only the claim's holder records: a worker whose lease ran out (and whose send another worker
    /// may have made again, answered by the first through its idempotency key) changes nothing. The
    /// claim is known by the attempt it was: each claim counts one.
    public func record(
        _ claimed: ScheduledSend,
        _ progress: Progress,
        nextTiming: ScheduledSend.Timing? = nil,
        nextOccurrenceAt: Date? = nil
    ) async throws {
        switch progress {
        case .refused(let reason):
            try await client.query(
                """
                UPDATE scheduled_sends SET state = 'failed', error = \(reason), claimed_until = NULL, updated_at = now()
                WHERE \(Self.held(claimed))
                """
            )
        case .sent(let notificationID, let zones, let nextAt):
            try await advance(claimed, sent: true, notificationID: notificationID, zones: zones, nextAt: nextAt, nextTiming, nextOccurrenceAt)
        case .notDue(let nextAt):
            try await advance(claimed, sent: false, notificationID: nil, zones: [], nextAt: nextAt, nextTiming, nextOccurrenceAt)
        }
    }

    private func advance(
        _ claimed: ScheduledSend,
        sent: Bool,
        notificationID: Int64?,
        zones: [String],
        nextAt: Date?,
        _ nextTiming: ScheduledSend.Timing?,
        _ nextOccurrenceAt: Date?
    ) async throws {
        let part: PostgresQuery =
            """
            notification_ids = notification_ids || \(notificationID.map { [$0] } ?? [Int64]()),
            error = NULL, claimed_until = NULL, updated_at = now()
            """
        if let nextAt {
            try await client.query(
                """
                UPDATE scheduled_sends SET \(part), parts = parts + \(sent ? 1 : 0), zones_done = zones_done || \(zones),
                    next_at = \(PostgresTimestamp(nextAt))
                WHERE \(Self.held(claimed))
                """
            )
        } else if let nextTiming, let nextOccurrenceAt {
            let (sendAt, localTime) = Self.columns(nextTiming)
            try await client.query(
                """
                UPDATE scheduled_sends SET \(part), occurrence = occurrence + 1, parts = 0, zones_done = '{}', send_at = \(sendAt),
                    local_time = \(localTime),
                    next_at = \(PostgresTimestamp(nextOccurrenceAt))
                WHERE \(Self.held(claimed))
                """
            )
        } else {
            try await client.query(
                "UPDATE scheduled_sends SET \(part), parts = parts + \(sent ? 1 : 0), zones_done = zones_done || \(zones), state = 'sent' WHERE \(Self.held(claimed))"
            )
        }
    }

    /// The row of a claim, while the claim holds it.
    static func held(_ claimed: ScheduledSend) -> PostgresQuery {
        "id = \(claimed.id) AND attempts = \(Int32(claimed.attempts)) AND state = 'scheduled'"
    }

    /// Lets go of a claim after a failure that may pass (the database, the network), to be tried
    /// again from `retryAt`.
    public func release(_ claimed: ScheduledSend, retryAt: Date, error: String) async throws {
        try await client.query(
            """
            UPDATE scheduled_sends SET claimed_until = NULL, next_at = \(PostgresTimestamp(retryAt)), error = \(String(error.prefix(500))),
                updated_at = now()
            WHERE \(Self.held(claimed))
            """
        )
    }

    /// What a send made for a claim runs first in its transaction: the schedule's row, locked
    /// against a cancellation, while the claim holds and the request is still the one the worker read;
    /// nothing (so nothing is sent) once it is not: another worker's claim, a cancellation, or an
    /// erasure that took a user out of the request.
    public static func fence(_ claimed: ScheduledSend) -> PostgresQuery {
        "SELECT 1 FROM scheduled_sends WHERE \(held(claimed)) AND request = \(PostgresJSONB(utf8: claimed.request)) FOR SHARE"
    }

    /// The time zones a notification made for a part of a local time reached (`nil`: all).
    public func timeZones(ofNotification id: Int64) async throws -> [String]? {
        try await client.query("SELECT time_zones FROM notifications WHERE id = \(id)").first?.decode([String]?.self)
    }

    /// When the next waiting send can be claimed (due, and no lease holding it); `nil` when none waits.
    public func nextClaimable() async throws -> Date? {
        try await client.query(
            "SELECT min(greatest(next_at, coalesce(claimed_until, next_at))) FROM scheduled_sends WHERE state = 'scheduled'"
        )[0].decode(Date?.self)
    }

    /// Sends still waiting, for the overview.
    public func waiting() async throws -> Int64 {
        try await client.query("SELECT count(*) FROM scheduled_sends WHERE state = 'scheduled'")[0].decode(Int64.self)
    }

    // MARK: - Rows

    static func columns(_ timing: ScheduledSend.Timing) -> (PostgresTimestamp?, String?) {
        switch timing {
        case .at(let date): return (PostgresTimestamp(date), nil)
        case .local(let time): return (nil, time.description)
        }
    }

    static let columns: PostgresQuery = columns("scheduled_sends")

    static func columns(_ table: String) -> PostgresQuery {
        let t = table
        return """
            \(unescaped: t).id, \(unescaped: t).request, \(unescaped: t).channel_url, \(unescaped: t).template_key, \
            \(unescaped: t).audience, \(unescaped: t).send_at, \(unescaped: t).local_time, \(unescaped: t).repeat, \
            \(unescaped: t).state, \(unescaped: t).next_at, \(unescaped: t).occurrence, \(unescaped: t).parts, \
            \(unescaped: t).zones_done, \(unescaped: t).attempts, \(unescaped: t).notification_ids, \(unescaped: t).error, \
            \(unescaped: t).created_at, \(unescaped: t).updated_at
            """
    }

    static func decode(_ row: PostgresRow) throws -> ScheduledSend {
        let (id, request, channelURL, templateKey, audience, sendAt, localTime, repeats) =
            try row.decode((Int64, PostgresJSONB, String, String, String, Date?, String?, String?).self)
        let timing: ScheduledSend.Timing =
            if let sendAt { .at(sendAt) } else {
                .local(LocalDateTime(localTime ?? "") ?? LocalDateTime(year: 1970, month: 1, day: 1, hour: 0, minute: 0))
            }
        return ScheduledSend(
            id: id,
            request: Array(request.utf8),
            channelURL: channelURL,
            templateKey: templateKey,
            audience: audience,
            timing: timing,
            repeats: repeats.flatMap(ScheduledSend.Repeat.init(rawValue:)),
            state: ScheduledSend.State(rawValue: try row.decode(column: 8, as: String.self)) ?? .scheduled,
            nextAt: try row.decode(column: 9, as: Date.self),
            occurrence: Int(try row.decode(column: 10, as: Int32.self)),
            parts: Int(try row.decode(column: 11, as: Int32.self)),
            zonesDone: try row.decode(column: 12, as: [String].self),
            attempts: Int(try row.decode(column: 13, as: Int32.self)),
            notificationIDs: try row.decode(column: 14, as: [Int64].self),
            error: try row.decode(column: 15, as: String?.self),
            createdAt: try row.decode(column: 16, as: Date.self),
            updatedAt: try row.decode(column: 17, as: Date.self)
        )
    }
}
