import Foundation
import HeraldCore
import Postgres

extension CollectionStore {
    /// Marks the user's notifications in the channel read: all of them (`ids == nil`, which also moves
    /// `last_read_at` to now) or the given ones. Each copy that changes gets a new change position and
    /// leaves the unread counter in the same transaction, so two devices marking at once never count a
    /// notification twice, and `last_read_at` only ever moves forward. Returns the state after, and the
    /// mark's position (see `stateQuery`).
    public func markRead(userKey: Int64, channelKey: Int64, ids: [Int64]?) async throws -> (state: ChannelState, position: Int64) {
        // One round trip: the marks and the counter in one statement (the counter takes how many the
        // marks changed), the live hint, and the state read by a statement of its own (see
        // `stateQuery`).
        let results = try await client.transaction(
            Self.readStatements(userKey: userKey, channelKey: channelKey, ids: ids) + [
                LiveHint.channelState(userKey: userKey, channelKey: channelKey).query(when: Self.changeRecorded),
                Self.stateQuery(userKey: userKey, channelKey: channelKey),
            ]
        )
        return try Self.decodeState(results.last!.first!)
    }

    /// The statements of a read mark (see `markRead`), in the caller's transaction: the marks and
    /// the counter, recording whether anything changed (`changeRecorded`), then the webhook events.
    static func readStatements(userKey: Int64, channelKey: Int64, ids: [Int64]?) -> [PostgresQuery] {
        [
            """
            WITH old AS (SELECT opened FROM channel_states WHERE user_key = \(userKey) AND channel_key = \(channelKey)),
            marked AS (
                UPDATE notification_recipients SET status = \(CollectionItem.Status.read), change_xid = \(ChangePositionSQL.currentTransactionID), read_at = now()
                WHERE user_key = \(userKey) AND channel_key = \(channelKey) AND status < \(CollectionItem.Status.read) AND NOT deleted
                    AND (\(ids)::int8[] IS NULL OR notification_id = ANY(\(ids)))
                RETURNING 1
            )
            INSERT INTO channel_states AS s (user_key, channel_key, unread_adjustment, last_read_at, opened, opened_xid)
            VALUES (\(userKey), \(channelKey), -(SELECT count(*) FROM marked), \(ids == nil ? Date() : nil), true, \(ChangePositionSQL.currentTransactionID))
            ON CONFLICT (user_key, channel_key) DO UPDATE SET
                unread_adjustment = s.unread_adjustment + EXCLUDED.unread_adjustment, \(Self.openedSQL),
                last_read_at = CASE WHEN \(ids == nil) THEN greatest(s.last_read_at, now()) ELSE s.last_read_at END
            RETURNING \(Self.recordChange("(SELECT count(*) FROM marked) > 0 OR \(ids)::int8[] IS NULL OR NOT coalesce((SELECT opened FROM old), false)"))
            """,
            // Webhook events for the copies this transaction read (`sql/0018_webhooks.sql`): found by
            // their change position, through the index of changes; nothing is read unless a webhook
            // wants them.
            """
            SELECT herald_webhook_event('notification.read', jsonb_build_object('notification_id', r.notification_id::text,
                'channel_url', c.url, 'user_id', u.id, 'read_at', \(TimeSQL.rfc3339("r.read_at"))))
            FROM notification_recipients r JOIN channels c ON c.key = r.channel_key JOIN users u ON u.key = r.user_key
            WHERE herald_webhook_wanted('notification.read') AND r.user_key = \(userKey) AND r.channel_key = \(channelKey)
                AND r.change_xid = \(ChangePositionSQL.currentTransactionID) AND r.read_at = now() AND r.status = \(CollectionItem.Status.read)
            """,
        ]
    }

    /// A mark's write records whether it changed anything the user's streams show, for the hint that
    /// follows it in the same transaction (`changeRecorded`): a mark that changes nothing — seen at a
    /// time already passed, read of copies already read — wakes no stream. Its `condition` reads the
    /// state the statement started from (`old`); state only moves forward, so a stale read can only
    /// send a hint too many, never miss one. (A read of everything always moves `last_read_at`.)
    static func recordChange(_ condition: PostgresQuery) -> PostgresQuery {
        "set_config('herald.mark_changed', (\(condition))::text, true)"
    }

    static let changeRecorded: PostgresQuery = "current_setting('herald.mark_changed', true) = 'true'"

    /// The channel state as a statement after the caller's write sees it. Not the write's own
    /// `RETURNING`: a write that waited for a folding batch's row lock continues with the row as that
    /// batch left it (one more in the adjustment) but counts broadcasts in its own older snapshot (the
    /// broadcast not yet folded), so it would count the broadcast twice. A new statement sees both
    /// halves of the batch, or neither; our own write holds the row, so nothing moves in between.
    ///
    /// Its last column is the mark's position, its transaction's id: a later read whose snapshot's
    /// horizon is above it includes the mark, and one at or below it may not (a standby that has not
    /// replayed it yet), so a client keeps the mark's state over such an answer's.
    static func stateQuery(userKey: Int64, channelKey: Int64) -> PostgresQuery {
        """
        SELECT s.unread_adjustment + \(UnreadSQL.broadcastsReaching(user: "s.user_key", channel: "s.channel_key")),
            s.last_read_at, s.last_seen_at, s.reset_count, \(ChangePositionSQL.currentTransactionID)
        FROM channel_states s WHERE s.user_key = \(userKey) AND s.channel_key = \(channelKey)
        """
    }

    /// Moves `last_seen_at` forward to `at` (never backwards). Returns the state after, and the mark's
    /// position (see `stateQuery`).
    public func markSeen(userKey: Int64, channelKey: Int64, at: Date) async throws -> (state: ChannelState, position: Int64) {
        let results = try await client.transaction([
            """
            WITH old AS (SELECT opened, last_seen_at FROM channel_states WHERE user_key = \(userKey) AND channel_key = \(channelKey))
            INSERT INTO channel_states AS s (user_key, channel_key, last_seen_at, opened, opened_xid)
            VALUES (\(userKey), \(channelKey), \(at), true, \(ChangePositionSQL.currentTransactionID))
            ON CONFLICT (user_key, channel_key) DO UPDATE SET last_seen_at = greatest(s.last_seen_at, EXCLUDED.last_seen_at), \(Self.openedSQL)
            RETURNING \(Self.recordChange("NOT coalesce((SELECT opened AND last_seen_at >= \(at) FROM old), false)"))
            """,
            LiveHint.channelState(userKey: userKey, channelKey: channelKey).query(when: Self.changeRecorded),
            // Webhook events for the copies this transaction read (`sql/0018_webhooks.sql`): found by
            // their change position, through the index of changes; nothing is read unless a webhook
            // wants them.
            """
            SELECT herald_webhook_event('notification.read', jsonb_build_object('notification_id', r.notification_id::text,
                'channel_url', c.url, 'user_id', u.id, 'read_at', \(TimeSQL.rfc3339("r.read_at"))))
            FROM notification_recipients r JOIN channels c ON c.key = r.channel_key JOIN users u ON u.key = r.user_key
            WHERE herald_webhook_wanted('notification.read') AND r.user_key = \(userKey) AND r.channel_key = \(channelKey)
                AND r.change_xid = \(ChangePositionSQL.currentTransactionID) AND r.read_at = now() AND r.status = \(CollectionItem.Status.read)
            """,
            Self.stateQuery(userKey: userKey, channelKey: channelKey),
        ])
        return try Self.decodeState(results[3].first!)
    }

    /// Records that the user opened the channel, so that it shows in their channel list. Once it is
    /// recorded, an opening (every first load of a collection) only reads: no row lock, no new row version.
    public func open(userKey: Int64, channelKey: Int64) async throws {
        try await client.query(
            """
            INSERT INTO channel_states AS s (user_key, channel_key, opened, opened_xid)
            SELECT \(userKey), \(channelKey), true, \(ChangePositionSQL.currentTransactionID)
            WHERE NOT EXISTS (SELECT 1 FROM channel_states WHERE user_key = \(userKey) AND channel_key = \(channelKey) AND opened)
            ON CONFLICT (user_key, channel_key) DO UPDATE SET \(Self.openedSQL)
            """
        )
    }

    /// The `ON CONFLICT` assignments of a write that opens the channel (`EXCLUDED.opened_xid` its
    /// transaction id): the opening's position for the channel list's change log is taken only when
    /// `opened` turns true, as the list changes only then.
    static let openedSQL: PostgresQuery = "opened = true, opened_xid = CASE WHEN s.opened THEN s.opened_xid ELSE EXCLUDED.opened_xid END"

    /// An admin reset of the user's channel: every copy is removed from the collection, the unread
    /// count goes to 0, and every token issued before stops being live.
    public func reset(userKey: Int64, channelKey: Int64) async throws {
        try await client.transaction([
            """
            WITH gone AS (
                UPDATE notification_recipients SET deleted = true, change_xid = \(ChangePositionSQL.currentTransactionID),
                    data = NULL, push_title = NULL, push_body = NULL
                WHERE user_key = \(userKey) AND channel_key = \(channelKey) AND NOT deleted
                RETURNING status
            )
            INSERT INTO channel_states AS s (user_key, channel_key, unread_adjustment, reset_count)
            VALUES (\(userKey), \(channelKey), -(SELECT count(*) FILTER (WHERE status < \(CollectionItem.Status.read)) FROM gone), 1)
            ON CONFLICT (user_key, channel_key) DO UPDATE SET
                unread_adjustment = s.unread_adjustment + EXCLUDED.unread_adjustment, reset_count = s.reset_count + 1
            """,
            LiveHint.channelState(userKey: userKey, channelKey: channelKey).query,
        ])
    }

    /// The user's unread counts per channel (channels with a state), their total, and the snapshot's
    /// horizon: every change below it is counted (a client keeps a count it holds from a newer
    /// position — a mark, a stream event — over this one's).
    public func unread(userKey: Int64) async throws -> (total: Int64, channels: [(url: String, unread: Int64)], horizon: Int64) {
        let rows = try await client.query(
            """
            SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, listed.url, listed.unread
            FROM (SELECT 1) AS one LEFT JOIN (
                SELECT c.url, u.unread FROM herald_user_channels(\(userKey)) AS u JOIN channels c ON c.key = u.channel_key
            ) AS listed ON true
            ORDER BY listed.url
            """
        )
        let horizon = try rows[0].decode(column: 0, as: Int64.self)
        let channels = try rows.compactMap { row -> (url: String, unread: Int64)? in
            let (_, url, unread) = try row.decode((Int64, String?, Int64?).self)
            guard let url, let unread else { return nil }
            return (url, unread)
        }
        return (channels.reduce(0) { $0 + $1.unread }, channels, horizon)
    }

    /// A row of `stateQuery`.
    static func decodeState(_ row: PostgresRow) throws -> (state: ChannelState, position: Int64) {
        let (unread, lastRead, lastSeen, resetCount, position) = try row.decode((Int64, Date?, Date?, Int32, Int64).self)
        return (ChannelState(unreadCount: unread, lastReadAt: lastRead, lastSeenAt: lastSeen, resetCount: resetCount), position)
    }
}
