import Foundation
import HeraldCore
import Postgres

/// A device the dispatcher has claimed for a refresh push.
public struct DeviceClaim: Sendable, Equatable {
    public var deviceID: Int64
    public var userKey: Int64
    public var address: PushAddress
    /// The want this claim answers; a later want (a change during the send) survives the delivery.
    public var wantedXID: Int64
    public var notificationID: Int64?
    /// Attempts so far, this one included.
    public var attempts: Int
    /// When the claim was made (the claiming transaction's `now()`, microseconds since 1970): a sync
    /// after it answers the push even if it comes before the delivery is recorded.
    public var claimedAt: Int64
}

/// What a dispatcher's claim on a device is: how long it holds, and which devices it may take
/// (`PushStore.claimDue`): those of one push service, so that each service's pushes go out in a
/// lane of their own.
public struct ClaimTerms: Sendable {
    public var service: PushService
    public var lease: Duration
    public var minimumInterval: Duration
    public var policy: MultiDevicePolicy

    public init(service: PushService = .apns, lease: Duration, minimumInterval: Duration, policy: MultiDevicePolicy = .allOffline) {
        self.service = service
        self.lease = lease
        self.minimumInterval = minimumInterval
        self.policy = policy
    }
}

/// A push refused for good or out of retries.
public struct PushFailure: Sendable, Equatable {
    public var id: Int64
    public var userID: String?
    public var service: PushService
    public var deviceToken: String
    public var environment: String
    public var topic: String
    public var status: Int?
    public var reason: String
    public var attempts: Int
    public var tokenRemoved: Bool
    public var failedAt: Date
}

/// The durable outbox of silent refresh pushes and the per-device state that coalesces them.
///
/// The flow: a change's transaction writes a `push_outbox` row (`enqueue`); a dispatcher turns rows
/// into per-device wants (`expandOutbox`, a slice of recipients at a time) and deletes them in the
/// transaction that takes their last recipients; it then claims
/// due devices with a lease (`claimDue`), sends, and records each outcome. A device with a delivered
/// push outstanding gets no other until it syncs (`markSynced`), and none more often than the minimum
/// interval. Everything is in the database, so a crash loses nothing: an outbox row stays until its
/// expansion commits, and a claim held by a dead process lapses and is taken over.
public struct PushStore: Sendable {
    public let client: PostgresClient

    /// The LISTEN/NOTIFY channel that hints a dispatcher that work arrived.
    public static let wakeChannel = "herald_push"

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Records, in the caller's transaction, that the recipients of `notification` (those with keys in
    /// `(after, through]` when given) need a refresh, and hints every live hub of the change.
    static func enqueue(
        notification: Int64,
        channelKey: Int64,
        change: LiveHint.NotificationChange,
        usersAfter after: Int64? = nil,
        through: Int64? = nil,
        sparse: Bool = false,
        on connection: PostgresConnection
    ) async throws {
        // A fan-out batch to everyone names its span (every user in it has a copy); a sparse batch (a
        // topic's) and a send, edit or deletion name their recipients, read from the copies.
        let hint: PostgresQuery
        if let after, let through, sparse {
            hint = LiveHint.notificationPayload(change, id: notification, channelKey: channelKey, within: (after, through))
        } else if let after, let through {
            let payload = LiveHint.notification(change, id: notification, channelKey: channelKey, recipients: .range(after: after, through: through))
                .payload
            hint = "\(payload) || ' @' || \(ChangePositionSQL.currentTransactionID)"
        } else {
            hint = LiveHint.notificationPayload(change, id: notification, channelKey: channelKey)
        }
        // One statement: the row and both hints (delivered at commit, dropped on rollback).
        try await connection.query(
            """
            WITH queued AS (
                INSERT INTO push_outbox (notification_id, user_after, user_through) VALUES (\(notification), \(after), \(through))
                RETURNING 1
            ), alerts AS (
                -- A new notification that asked for an alert: its recipients' devices get one too
                -- (a digest's at the end of its window instead when it says so, or never).
                INSERT INTO alert_outbox (notification_id, user_after, user_through)
                SELECT id, \(after), \(through) FROM notifications
                WHERE id = \(notification) AND \(change == .created) AND (push->>'alert')::boolean IS TRUE
                    AND coalesce(batch->>'alert', 'first') = 'first'
            )
            SELECT pg_notify(\(Self.wakeChannel), ''), pg_notify(\(LiveHint.channel), \(hint)) FROM queued
            """
        )
    }

    /// Turns the recipients of the oldest free outbox row into device wants, at most `users` of them
    /// in user-key order; the row goes once its last recipient is done, else it moves past the slice.
    /// With `terms`, the same statement also claims the devices it makes want a refresh that are free
    /// to claim (as `claimDue` would, one update of each device row fewer). Returns the recipients
    /// taken and the claims, or nil when no row was free.
    ///
    /// Why slices and not whole rows: a row can name 100,000 recipients (a send to that many listed
    /// users); taking it whole would be one long transaction the dispatcher waits for before the
    /// first push, where a slice at a time lets the pushes of one slice go out while the next is
    /// expanded.
    public func expandOutbox(users: Int, claiming terms: ClaimTerms? = nil) async throws -> (recipients: Int, claims: [DeviceClaim])? {
        let claimable: PostgresQuery =
            terms.map { "p.service = \($0.service.rawValue) AND \(Self.claimable("p", user: "d.user_key", terms: $0))" } ?? "false"
        let lease = TimeSQL.interval(terms?.lease ?? .zero)
        return try await client.withRetryingTransaction { connection in
            let rows = try await connection.query(
                """
                WITH next AS (
                    SELECT id, notification_id, user_after, user_through FROM push_outbox ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
                ), candidates AS (
                    SELECT next.notification_id, r.user_key
                    FROM next CROSS JOIN LATERAL (
                        -- Bounds the index can use (an `IS NULL OR` is a filter: every recipient of
                        -- the notification would be read and sorted for each slice).
                        SELECT r.user_key FROM notification_recipients r
                        WHERE r.notification_id = next.notification_id
                            AND r.user_key > coalesce(next.user_after, \(Int64.min))
                            AND r.user_key <= coalesce(next.user_through, \(Int64.max))
                        ORDER BY r.user_key LIMIT \(users + 1)
                    ) r
                ), slice AS (
                    SELECT notification_id, user_key FROM candidates ORDER BY user_key LIMIT \(users)
                ), finished AS (
                    DELETE FROM push_outbox o USING next
                    WHERE o.id = next.id AND (SELECT count(*) FROM candidates) <= \(users)
                    RETURNING 1
                ), advanced AS (
                    UPDATE push_outbox o SET user_after = (SELECT max(user_key) FROM slice) FROM next
                    WHERE o.id = next.id AND (SELECT count(*) FROM candidates) > \(users)
                    RETURNING 1
                ), wanted AS (
                    -- The claim is decided in SET, on the row version this update locks (a claim a
                    -- concurrent dispatcher just committed is seen), once for both columns.
                    UPDATE device_push_state p SET wanted_xid = pg_current_xact_id()::text::bigint,
                        notification_id = coalesce(p.notification_id, slice.notification_id),
                        (claimed_until, attempts) = (
                            SELECT CASE WHEN claim THEN now() + \(lease)::interval ELSE p.claimed_until END,
                                CASE WHEN claim THEN p.attempts + 1 ELSE p.attempts END
                            FROM (SELECT \(claimable) AS claim) AS decided
                        )
                    FROM slice JOIN devices d ON d.user_key = slice.user_key
                    WHERE p.device_id = d.id
                    RETURNING d.id, d.user_key, \(PushAddress.columns("d")), p.wanted_xid, p.notification_id,
                        p.attempts, p.claimed_until IS NOT DISTINCT FROM now() + \(lease)::interval AS claimed
                ), hinted AS (
                    -- A want is answered by the device's next sync, which must then reach the
                    -- database rather than be answered from memory (see `ChangeNotifier`).
                    \(LiveHint.devicesChangedQuery("SELECT user_key FROM wanted"))
                )
                -- `hinted` is read so that it runs (a plain SELECT in WITH runs only when read).
                SELECT (SELECT count(*) FROM next) + 0 * (SELECT count(*) FROM hinted), (SELECT count(*) FROM slice),
                    w.id, w.user_key, \(PushAddress.columns("w")), w.wanted_xid, w.notification_id, w.attempts,
                    \(TimeSQL.nowMicroseconds)
                FROM (SELECT 1) AS always LEFT JOIN wanted w ON w.claimed
                """
            )
            let (taken, recipients) = try rows[0].decode((Int64, Int64).self)
            guard taken > 0 else { return nil }
            guard terms != nil else { return (Int(recipients), []) }
            let claims = try rows.compactMap { row -> DeviceClaim? in
                // Without a claim, the LEFT JOIN leaves the device's columns NULL.
                guard try row.decode(column: 2, as: Int64?.self) != nil else { return nil }
                return try Self.decodeClaim(row, at: 2)
            }
            return (Int(recipients), claims)
        }
    }

    /// Expands outbox rows (`expandOutbox(users:claiming:)`) until `users` recipients are done or no
    /// row is free; returns how many recipients that was, the claims made, and whether any row was found.
    public func expandOutbox(
        atLeast users: Int,
        claiming terms: ClaimTerms? = nil
    ) async throws -> (recipients: Int, claims: [DeviceClaim], foundWork: Bool) {
        var recipients = 0
        var claims: [DeviceClaim] = []
        var foundWork = false
        while recipients < users, let taken = try await expandOutbox(users: users - recipients, claiming: terms) {
            recipients += taken.recipients
            claims += taken.claims
            foundWork = true
        }
        return (recipients, claims, foundWork)
    }

    /// SQL true for a device's push state (`alias`, a `device_push_state` row; `user`, the column that
    /// holds the device's user key) a dispatcher may claim now under `terms`, whether or not it wants a
    /// refresh: none outstanding, past its retry time and the minimum interval since its last push, not
    /// claimed by a live dispatcher, and offline by the policy — no live stream names the device
    /// (`anyOffline`) or its user (`allOffline`).
    static func claimable(_ alias: PostgresQuery, user: PostgresQuery, terms: ClaimTerms) -> PostgresQuery {
        let online = PresenceSQL.online(deviceColumn: "\(alias).device_id", userColumn: user, policy: terms.policy)
        return """
            (NOT \(alias).outstanding AND \(alias).next_attempt_at <= now()
                AND (\(alias).claimed_until IS NULL OR \(alias).claimed_until < now())
                AND (\(alias).last_push_at IS NULL OR \(alias).last_push_at <= now() - \(TimeSQL.interval(terms.minimumInterval))::interval)
                AND NOT \(online))
            """
    }

    /// Claims up to `limit` devices that want a refresh, have none outstanding, are past their retry
    /// time and the minimum interval since their last push, are not claimed by a live dispatcher, and
    /// are offline by the terms' policy: no live stream names the device (`anyOffline`) or the user
    /// (`allOffline`). An online device keeps its want: if its stream closes normally the want is
    /// answered (`PresenceStore.remove`); if its process dies, it is pushed once the node expires.
    public func claimDue(limit: Int, terms: ClaimTerms) async throws -> [DeviceClaim] {
        let rows = try await client.query(
            """
            UPDATE device_push_state p SET claimed_until = now() + \(TimeSQL.interval(terms.lease))::interval, attempts = p.attempts + 1
            FROM devices d
            -- The devices are chosen first (in the due index's order), then updated through the
            -- primary key: as a join, the planner read the whole table to update a batch of it.
            WHERE d.id = p.device_id AND p.device_id = ANY(ARRAY(
                SELECT s.device_id FROM device_push_state s JOIN devices d ON d.id = s.device_id
                WHERE s.wanted_xid IS NOT NULL AND s.service = \(terms.service.rawValue)
                    AND \(Self.claimable("s", user: "d.user_key", terms: terms))
                ORDER BY s.next_attempt_at, s.device_id LIMIT \(limit) FOR UPDATE OF s SKIP LOCKED
            ))
            RETURNING d.id, d.user_key, \(PushAddress.columns("d")), p.wanted_xid, p.notification_id, p.attempts,
                \(TimeSQL.nowMicroseconds)
            """
        )
        return try rows.map { try Self.decodeClaim($0, at: 0) }
    }

    /// A claim from `id, user_key, <address columns>, wanted_xid, notification_id, attempts, claimed at`
    /// starting at `column`.
    private static func decodeClaim(_ row: PostgresRow, at column: Int) throws -> DeviceClaim {
        let rest = column + 2 + PushAddress.columnCount
        return DeviceClaim(
            deviceID: try row.decode(column: column, as: Int64.self),
            userKey: try row.decode(column: column + 1, as: Int64.self),
            address: try PushAddress.decode(row, at: column + 2),
            wantedXID: try row.decode(column: rest, as: Int64.self),
            notificationID: try row.decode(column: rest + 1, as: Int64?.self),
            attempts: Int(try row.decode(column: rest + 2, as: Int32.self)),
            claimedAt: try row.decode(column: rest + 3, as: Int64.self)
        )
    }

    /// Each user's channels with unread counts, and the total: what a refresh push names.
    ///
    /// The same answer as `herald_user_channels` per user (channels with a state or a live broadcast
    /// that reached the user and is not folded yet, and which the user has opened or has a live copy
    /// in; unread = the state's adjustment + those broadcasts), computed for the whole batch in one
    /// set-based statement: calling the function per user plans its query once per call
    /// (docs/decisions/2026-11-22-sql-functions-planned-per-execution.md).
    public func refreshSummaries(userKeys: [Int64]) async throws -> [Int64: [(url: String, unread: Int64)]] {
        let rows = try await client.query(
            """
            WITH k AS (SELECT DISTINCT unnest(\(userKeys)::int8[]) AS user_key),
            states AS (
                -- Per user through the index: joined as a set, the planner reads every user's states.
                SELECT s.* FROM k CROSS JOIN LATERAL (
                    SELECT s.user_key, s.channel_key, s.unread_adjustment, s.opened FROM channel_states s WHERE s.user_key = k.user_key
                ) s
            ),
            broadcasts AS (
                SELECT k.user_key, b.channel_key, count(*) AS reaching
                FROM k JOIN notifications b ON \(UnreadSQL.countedBroadcast("b", reaching: "k.user_key"))
                GROUP BY k.user_key, b.channel_key
            )
            SELECT coalesce(s.user_key, b.user_key), c.url, (coalesce(s.unread_adjustment, 0) + coalesce(b.reaching, 0))::int8
            FROM states s FULL JOIN broadcasts b ON b.user_key = s.user_key AND b.channel_key = s.channel_key
            JOIN channels c ON c.key = coalesce(s.channel_key, b.channel_key)
            WHERE s.opened OR EXISTS (
                SELECT 1 FROM notification_recipients r
                WHERE r.user_key = coalesce(s.user_key, b.user_key) AND r.channel_key = c.key AND NOT r.deleted
            )
            ORDER BY 1, 2
            """
        )
        var summaries: [Int64: [(url: String, unread: Int64)]] = [:]
        for row in rows {
            let (user, url, unread) = try row.decode((Int64, String, Int64).self)
            summaries[user, default: []].append((url, unread))
        }
        return summaries
    }

    /// Delivered: the device now has a push outstanding — unless it synced since the claim (the push
    /// reached it and it answered before the delivery was recorded: it must be pushed again at the
    /// next change, not wait for a sync that already happened); its want is answered unless a newer one
    /// arrived meanwhile; the causing notification counts the push.
    public func recordDelivered(_ claims: [DeviceClaim]) async throws {
        guard !claims.isEmpty else { return }
        try await client.transaction([
            """
            UPDATE device_push_state p SET last_push_at = now(), attempts = 0, next_attempt_at = '-infinity', claimed_until = NULL,
                outstanding = p.last_synced_at IS NULL
                    OR p.last_synced_at < timestamptz 'epoch' + c.claimed_at * interval '1 microsecond',
                wanted_xid = CASE WHEN p.wanted_xid = c.xid THEN NULL ELSE p.wanted_xid END,
                notification_id = CASE WHEN p.wanted_xid = c.xid THEN NULL ELSE p.notification_id END
            FROM unnest(\(claims.map(\.deviceID))::int8[], \(claims.map(\.wantedXID))::int8[], \(claims.map(\.claimedAt))::int8[])
                AS c(id, xid, claimed_at)
            WHERE p.device_id = c.id
            """,
            Self.countPushes(notificationIDs: claims.compactMap(\.notificationID)),
            // A push now outstanding: the next sync naming the device must record that it answered it.
            LiveHint.devicesChangedQuery(userKeys: claims.map(\.userKey)),
        ])
    }

    /// Adds one to each notification's `pushes_sent` per time it is named (refresh and alert pushes).
    static func countPushes(notificationIDs ids: [Int64]) -> PostgresQuery {
        """
        UPDATE notifications n SET pushes_sent = n.pushes_sent + p.count
        FROM (SELECT id, count(*) AS count FROM unnest(\(ids)::int8[]) AS t(id) GROUP BY id) AS p
        WHERE n.id = p.id
        """
    }

    /// Try again no earlier than `after` from now (the claim is released).
    public func recordRetry(_ claim: DeviceClaim, after delay: Duration) async throws {
        try await client.query(
            """
            UPDATE device_push_state SET next_attempt_at = now() + \(TimeSQL.interval(delay))::interval, claimed_until = NULL
            WHERE device_id = \(claim.deviceID)
            """
        )
    }

    /// Refused for good or out of retries: the failure is kept for admins, the want dropped, and the
    /// device removed when its service says it is gone — unless, for a 410 with a timestamp, the device was
    /// registered again after it.
    public func recordFailure(_ claim: DeviceClaim, status: Int?, reason: String, removeToken: Bool, invalidSince: Date?) async throws {
        try await client.withRetryingTransaction { connection in
            let removed = try await Self.recordFailure(
                userKey: claim.userKey,
                deviceID: claim.deviceID,
                address: claim.address,
                status: status,
                reason: reason,
                attempts: claim.attempts,
                removeToken: removeToken,
                invalidSince: invalidSince,
                on: connection
            )
            if !removed {
                try await connection.query(
                    """
                    UPDATE device_push_state SET wanted_xid = NULL, notification_id = NULL, attempts = 0,
                        next_attempt_at = '-infinity', claimed_until = NULL
                    WHERE device_id = \(claim.deviceID)
                    """
                )
            }
        }
    }

    /// Lists a failed push for admins, removing the device first when its service says it is gone
    /// (unless, for a 410 with a timestamp, it was registered again after it). Returns whether the
    /// token went. Shared by refresh and alert pushes.
    static func recordFailure(
        userKey: Int64,
        deviceID: Int64,
        address: PushAddress,
        status: Int?,
        reason: String,
        attempts: Int,
        removeToken: Bool,
        invalidSince: Date?,
        on connection: PostgresConnection
    ) async throws -> Bool {
        var removed = false
        if removeToken {
            removed =
                try await connection.query(
                    """
                    DELETE FROM devices WHERE id = \(deviceID)
                        AND (\(invalidSince)::timestamptz IS NULL OR registered_at <= \(invalidSince))
                    """
                ).affectedRows > 0
            if removed { try await connection.query(LiveHint.devicesChangedQuery(userKeys: [userKey])) }
        }
        try await connection.query(
            """
            INSERT INTO push_failures (user_key, service, device_token, environment, topic, status, reason, attempts, token_removed)
            VALUES (\(userKey), \(address.service.rawValue), \(address.token), \(address.environment), \(address.topic),
                \(status.map(Int32.init)), \(reason), \(Int32(attempts)), \(removed))
            """
        )
        // Webhook events, in the same transaction (`sql/0018_webhooks.sql`).
        try await connection.query(
            """
            WITH failure AS (
                SELECT jsonb_build_object('user_id', (SELECT id FROM users WHERE key = \(userKey)),
                    'service', \(address.service.rawValue)::text, 'device_token', \(address.token)::text,
                    'environment', \(address.environment)::text, 'topic', \(address.topic)::text) AS device
            )
            SELECT herald_webhook_event('push.failed', device || jsonb_build_object('status', \(status.map(Int32.init))::int,
                    'reason', \(reason)::text, 'attempts', \(Int32(attempts))::int, 'token_removed', \(removed)))
            FROM failure
            UNION ALL
            SELECT herald_webhook_event('device.removed', device || jsonb_build_object('reason', \(reason)::text))
            FROM failure WHERE \(removed)
            """
        )
        return removed
    }

    /// The device synced: its outstanding push is answered, and so is every want whose transaction
    /// committed before the sync's snapshot (`horizon`, the snapshot's xmin) — the sync saw what it
    /// announced. A want from a later transaction survives and brings a new push.
    ///
    /// A device that names itself on every poll would otherwise write its row on every poll: a new row
    /// version and, with a durable commit, a wait for the WAL flush on the poll's path. So the row is
    /// written only when the sync answers something, or when `last_synced_at` is older than
    /// `syncedAtResolution`.
    ///
    /// Returns `nil` when the user has no such device (nothing is written), else the horizon of the
    /// statement's snapshot: a push recorded as delivered after it has a transaction id at or above it
    /// (see `ChangeRecord`).
    public func markSynced(userKey: Int64, device: DeviceReference, horizon: Int64) async throws -> Int64? {
        let row = try await client.query(
            """
            WITH device AS (
                SELECT id FROM devices WHERE user_key = \(userKey) AND \(device.condition)
            ), synced AS (
                UPDATE device_push_state p SET outstanding = false, last_synced_at = now(),
                    wanted_xid = CASE WHEN p.wanted_xid < \(horizon) THEN NULL ELSE p.wanted_xid END,
                    notification_id = CASE WHEN p.wanted_xid < \(horizon) THEN NULL ELSE p.notification_id END
                FROM device WHERE p.device_id = device.id
                    AND (p.outstanding OR p.wanted_xid < \(horizon) OR p.last_synced_at IS NULL
                        OR p.last_synced_at < now() - \(TimeSQL.interval(Self.syncedAtResolution))::interval)
            )
            SELECT EXISTS (SELECT 1 FROM device), pg_snapshot_xmin(pg_current_snapshot())::text::bigint
            """
        )[0]
        let (found, snapshotHorizon) = try row.decode((Bool, Int64).self)
        return found ? snapshotHorizon : nil
    }

    /// How stale a device's `last_synced_at` may be when nothing else about the device changed.
    public static let syncedAtResolution: Duration = .seconds(60)

    /// The newest failures first, `limit` of them, older than the failure `before` when given.
    public func failures(limit: Int, before: Int64?) async throws -> [PushFailure] {
        let rows = try await client.query(
            """
            SELECT f.id, u.id, f.service, f.device_token, f.environment, f.topic, f.status, f.reason, f.attempts, f.token_removed,
                f.failed_at
            FROM push_failures f LEFT JOIN users u ON u.key = f.user_key
            WHERE \(before)::int8 IS NULL OR f.id < \(before)
            ORDER BY f.id DESC LIMIT \(limit)
            """
        )
        return try rows.map { row in
            let (id, user, service, token, environment, topic, status, reason, attempts, removed, at) = try row.decode(
                (Int64, String?, String, String, String, String, Int32?, String, Int32, Bool, Date).self
            )
            return PushFailure(
                id: id,
                userID: user,
                service: PushService(rawValue: service) ?? .apns,
                deviceToken: token,
                environment: environment,
                topic: topic,
                status: status.map(Int.init),
                reason: reason,
                attempts: Int(attempts),
                tokenRemoved: removed,
                failedAt: at
            )
        }
    }

    /// Outbox rows not yet expanded (for tests and the readiness of benchmarks).
    public func pendingOutbox() async throws -> Int {
        Int(try await client.query("SELECT count(*) FROM push_outbox")[0].decode(Int64.self))
    }
}
