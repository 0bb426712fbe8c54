import Foundation
import HeraldCore
import Postgres

/// A webhook as stored, without its secret.
public struct Webhook: Sendable, Equatable {
    public var name: String
    public var url: String
    public var events: [WebhookEventType]
    public var batchSize: Int
    /// Since when every attempt has failed; `nil` when the last one succeeded.
    public var failingSince: Date?
    /// When it was paused for failing too long; a `put` resumes it.
    public var pausedAt: Date?
    public var createdAt: Date
    public var updatedAt: Date
}

/// A delivery that was refused for good or ran out of retries.
public struct WebhookFailure: Sendable, Equatable {
    public var eventID: Int64
    public var type: String
    /// The event as it is posted (JSON text).
    public var event: String
    public var attempts: Int
    public var lastStatus: Int?
    public var lastError: String?
    public var failedAt: Date
}

/// Events claimed for one webhook, to be posted in one request.
public struct WebhookBatch: Sendable {
    public var webhook: String
    public var url: String
    public var secret: [UInt8]
    /// Event ids and each event as JSON text, in id order.
    public var events: [(id: Int64, json: String)]
}

/// What a delivery attempt came to.
public enum WebhookOutcome: Sendable, Equatable {
    /// A 2xx: the events are delivered.
    case delivered
    /// 5xx, 408, 429, a timeout or a connection error: tried again later, with backoff.
    case retry(status: Int?, error: String)
    /// Any other 4xx: the receiver refuses these events; they go to the dead-letter list.
    case refused(status: Int, error: String)
}

/// Webhooks, their outbox of events, and the deliveries' state (see `sql/0018_webhooks.sql`).
public struct WebhookStore: Sendable {
    let client: PostgresClient
    let box: SecretBox

    public init(client: PostgresClient, box: SecretBox) {
        self.client = client
        self.box = box
    }

    /// The LISTEN/NOTIFY channel a new event wakes dispatchers on.
    public static let wakeChannel = "herald_webhooks"

    /// Delays before each retry, in seconds (the last repeats), each stretched or shrunk by up to a
    /// fifth at random; 13 attempts span more than 24 hours even when every delay comes out short.
    public static let retryDelays: [Int] = [10, 30, 60, 300, 900, 1800, 3600, 7200, 14_400, 28_800, 28_800, 28_800]
    public static let maximumAttempts = retryDelays.count + 1
    private static let retryDelaysSQL = "ARRAY[" + retryDelays.map(String.init).joined(separator: ",") + "]::float8[]"

    /// Creates or replaces the webhook. `secret` may be left out when replacing (the stored one stays).
    /// Replacing resumes a paused webhook and makes its waiting deliveries due at once. Returns the
    /// webhook and whether it was created; `nil` when it is new and has no secret.
    public func put(name: String, url: String, events: [WebhookEventType], secret: String?, batchSize: Int) async throws -> (Webhook, created: Bool)?
    {
        let sealed = secret.map { PostgresBytes(box.seal(Array($0.utf8), context: Self.context(name))) }
        let types = events.map(\.rawValue)
        return try await client.withRetryingTransaction { connection in
            let rows = try await connection.query(
                """
                INSERT INTO webhooks AS w (name, url, events, secret, batch_size)
                SELECT \(name), \(url), \(types), secret, \(batchSize)
                FROM (SELECT coalesce(\(sealed)::bytea, (SELECT secret FROM webhooks WHERE name = \(name))) AS secret) AS given
                WHERE secret IS NOT NULL
                ON CONFLICT (name) DO UPDATE SET url = EXCLUDED.url, events = EXCLUDED.events, secret = EXCLUDED.secret,
                    batch_size = EXCLUDED.batch_size, failing_since = NULL, paused_at = NULL, updated_at = now()
                RETURNING \(Self.columns), (xmax = 0) AS created
                """
            )
            guard let row = rows.first else { return nil }
            try await connection.query(
                "UPDATE webhook_deliveries SET next_attempt_at = now() WHERE webhook = \(name) AND failed_at IS NULL AND next_attempt_at > now()"
            )
            try await connection.query("SELECT pg_notify(\(Self.wakeChannel), '')")
            return (try Self.decode(row), try row.decode(column: "created", as: Bool.self))
        }
    }

    public func get(_ name: String) async throws -> Webhook? {
        try await client.query("SELECT \(Self.columns) FROM webhooks WHERE name = \(name)").first.map(Self.decode)
    }

    public func list() async throws -> [Webhook] {
        try await client.query("SELECT \(Self.columns) FROM webhooks ORDER BY name").map(Self.decode)
    }

    /// Deletes the webhook with its waiting deliveries; false when there was none.
    public func delete(_ name: String) async throws -> Bool {
        try await client.withRetryingTransaction { connection in
            guard try await connection.query("DELETE FROM webhooks WHERE name = \(name)").affectedRows > 0 else { return false }
            try await connection.query(
                "DELETE FROM webhook_events e WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)"
            )
            return true
        }
    }

    /// The webhook's dead letters, by event id after `after`.
    public func failures(_ name: String, after: Int64?, limit: Int) async throws -> [WebhookFailure] {
        try await client.query(
            """
            SELECT e.id, e.type, \(Self.eventJSON("e")), d.attempts, d.last_status, d.last_error, d.failed_at
            FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
            WHERE d.webhook = \(name) AND d.failed_at IS NOT NULL AND d.event_id > \(after ?? 0)
            ORDER BY d.event_id LIMIT \(limit)
            """
        ).map { row in
            let (id, type, event, attempts, status, error, failedAt) = try row.decode((Int64, String, String, Int, Int?, String?, Date).self)
            return WebhookFailure(eventID: id, type: type, event: event, attempts: attempts, lastStatus: status, lastError: error, failedAt: failedAt)
        }
    }

    /// Puts the webhook's dead letters (all, or those of `eventIDs`) back in the queue, due now, with
    /// their attempts counted afresh; returns how many.
    public func resend(_ name: String, eventIDs: [Int64]?) async throws -> Int {
        try await client.withRetryingTransaction { connection in
            let count = try await connection.query(
                """
                UPDATE webhook_deliveries SET failed_at = NULL, attempts = 0, next_attempt_at = now(), claimed_until = NULL
                WHERE webhook = \(name) AND failed_at IS NOT NULL AND (\(eventIDs)::int8[] IS NULL OR event_id = ANY(\(eventIDs)))
                """
            ).affectedRows
            try await connection.query("SELECT pg_notify(\(Self.wakeChannel), '')")
            return count
        }
    }

    // MARK: - Delivery

    /// Claims up to a batch of due deliveries of one active webhook that no other dispatcher holds,
    /// for `lease`, leaving out the webhooks named in `excluding` (those the caller already has enough
    /// requests in flight to); `nil` when none is due. A claim held past its lease (a dispatcher that
    /// died) is taken over.
    public func claim(lease: Duration, excluding: [String] = []) async throws -> WebhookBatch? {
        try await client.withRetryingTransaction { connection in
            let due: PostgresQuery = "d.failed_at IS NULL AND d.next_attempt_at <= now() AND (d.claimed_until IS NULL OR d.claimed_until < now())"
            guard
                let hook = try await connection.query(
                    """
                    SELECT w.name, w.url, w.secret, w.batch_size FROM webhooks w
                    WHERE w.paused_at IS NULL AND NOT w.name = ANY(\(excluding))
                        AND EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook = w.name AND \(due))
                    ORDER BY w.name LIMIT 1 FOR UPDATE SKIP LOCKED
                    """
                ).first
            else { return nil }
            let (name, url, sealed, batchSize) = try hook.decode((String, String, PostgresBytes, Int).self)
            let rows = try await connection.query(
                """
                -- Chosen once, as a CTE (never inlined, as it locks): a subquery in the UPDATE's FROM may
                -- be scanned again, and each scan skips the rows the UPDATE has just claimed and locks
                -- the next ones, so one claim took more than a batch.
                -- In the due index's order, so the scan stops at the batch's end however long the
                -- backlog (by event id it would sort the whole backlog for every claim).
                WITH chosen AS (
                    SELECT d.event_id FROM webhook_deliveries d WHERE d.webhook = \(name) AND \(due)
                    ORDER BY d.next_attempt_at LIMIT \(batchSize) FOR UPDATE SKIP LOCKED
                ), claimed AS (
                    UPDATE webhook_deliveries d SET claimed_until = now() + \(TimeSQL.interval(lease))::interval, attempts = d.attempts + 1
                    FROM chosen WHERE d.webhook = \(name) AND d.event_id = chosen.event_id
                    RETURNING d.event_id
                )
                SELECT e.id, \(Self.eventJSON("e")) FROM claimed JOIN webhook_events e ON e.id = claimed.event_id ORDER BY e.id
                """
            )
            let events = try rows.map { try $0.decode((Int64, String).self) }.map { (id: $0.0, json: $0.1) }
            guard !events.isEmpty else { return nil }
            let secret = try box.open(sealed.bytes, context: Self.context(name))
            return WebhookBatch(webhook: name, url: url, secret: secret, events: events)
        }
    }

    /// Records how the batch's attempt went. A delivered batch is removed (and its events with it once
    /// no other webhook waits for them); a failure is scheduled again with backoff, or becomes a dead
    /// letter when refused or out of retries. A webhook whose attempts have all failed for longer than
    /// `pauseAfter` is paused.
    public func record(_ outcome: WebhookOutcome, for batch: WebhookBatch, pauseAfter: Duration) async throws {
        let ids = batch.events.map(\.id)
        try await client.withRetryingTransaction { connection in
            switch outcome {
            case .delivered:
                try await connection.query("DELETE FROM webhook_deliveries WHERE webhook = \(batch.webhook) AND event_id = ANY(\(ids))")
                try await connection.query(
                    "DELETE FROM webhook_events e WHERE e.id = ANY(\(ids)) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)"
                )
                try await connection.query("UPDATE webhooks SET failing_since = NULL WHERE name = \(batch.webhook) AND failing_since IS NOT NULL")
            case .retry(let status, let error):
                try await connection.query(
                    """
                    UPDATE webhook_deliveries SET claimed_until = NULL, last_status = \(status), last_error = \(String(error.prefix(500))),
                        failed_at = CASE WHEN attempts >= \(Self.maximumAttempts) THEN now() END,
                        next_attempt_at = now() + (\(unescaped: Self.retryDelaysSQL))[least(attempts, \(Self.retryDelays.count))]
                            * (0.8 + random() * 0.4) * interval '1 second'
                    WHERE webhook = \(batch.webhook) AND event_id = ANY(\(ids))
                    """
                )
                try await connection.query(
                    """
                    UPDATE webhooks SET failing_since = coalesce(failing_since, now()),
                        paused_at = CASE WHEN failing_since < now() - \(TimeSQL.interval(pauseAfter))::interval THEN now() END
                    WHERE name = \(batch.webhook)
                    """
                )
            case .refused(let status, let error):
                try await connection.query(
                    """
                    UPDATE webhook_deliveries SET claimed_until = NULL, last_status = \(status), last_error = \(String(error.prefix(500))),
                        failed_at = now()
                    WHERE webhook = \(batch.webhook) AND event_id = ANY(\(ids))
                    """
                )
            }
        }
    }

    // MARK: - Rows

    static func context(_ name: String) -> String { "webhook:\(name):secret" }

    /// An event as it is posted: id, type, time and the objects it names.
    static func eventJSON(_ alias: String) -> PostgresQuery {
        """
        json_build_object('id', \(unescaped: alias).id::text, 'type', \(unescaped: alias).type,
            'created_at', \(TimeSQL.rfc3339("\(alias).created_at")), 'data', \(unescaped: alias).data)::text
        """
    }

    static let columns: PostgresQuery = "name, url, events, batch_size, failing_since, paused_at, created_at, updated_at"

    static func decode(_ row: PostgresRow) throws -> Webhook {
        let (name, url, events, batchSize, failing, paused, created, updated) =
            try row.decode((String, String, [String], Int, Date?, Date?, Date, Date).self)
        return Webhook(
            name: name,
            url: url,
            events: events.compactMap(WebhookEventType.init(rawValue:)),
            batchSize: batchSize,
            failingSince: failing,
            pausedAt: paused,
            createdAt: created,
            updatedAt: updated
        )
    }
}
