import Foundation
import HeraldCore
import Postgres

/// A channel as a user's collection sees it.
public struct CollectionChannel: Sendable, Equatable {
    public var key: Int64
    public var url: String
    public var kind: Channel.Kind
    public var name: String
    public var coverURL: String
    public var customType: String
}

/// One user's state in one channel.
public struct ChannelState: Sendable, Equatable {
    public var unreadCount: Int64
    public var lastReadAt: Date?
    public var lastSeenAt: Date?
    public var resetCount: Int32

    public static let initial = ChannelState(unreadCount: 0, lastReadAt: nil, lastSeenAt: nil, resetCount: 0)
}

/// A notification as its recipient sees it.
public struct CollectionItem: Sendable, Equatable {
    public enum Status: Int16, Sendable {
        case sent = 0
        case delivered = 1
        case read = 2

        public var name: String {
            switch self {
            case .sent: return "SENT"
            case .delivered: return "DELIVERED"
            case .read: return "READ"
            }
        }
    }

    public var id: Int64
    public var templateKey: String
    public var templateVersion: Int
    /// The recipient's rendered data, as JSON text (passed through, never re-encoded).
    public var data: PostgresJSONB
    public var category: String
    public var tags: [String]
    public var eventDeadline: Date?
    public var createdAt: Date
    public var updatedAt: Date
    public var status: Status
    /// The user archived it: it shows only in collections of status `archived` or `all`.
    public var archived: Bool
    /// The buttons the notification offers (`[{"id","label","url"}]`, JSON text) and the ids of
    /// those the user pressed.
    public var actions: PostgresJSONB
    public var actionsDone: [String]
    /// The position of the copy's latest change in the user's change stream (the id of the
    /// transaction that made it): a client keeps, of two versions of a notification, the one with the
    /// higher position.
    public var position: Int64
}

/// A change in a user's stream: a notification's current state, or its removal.
public enum CollectionChange: Sendable, Equatable {
    case upserted(CollectionItem)
    case deleted(Int64)
}

/// Reads and writes one user's collections: pages, changes since a position, read and seen marks.
///
/// Each read is one statement, so that the page or the changes, the horizon and the channel state
/// all come from one snapshot without a transaction around them.
public struct CollectionStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// The channel, by URL.
    public func channel(_ url: String) async throws -> CollectionChannel? {
        try Self.decodeChannelLookup(try await client.query(Self.channelQuery(url)))
    }

    /// The channel lookup of `channel(_:)`, to be sent with a session check: it reads nothing of any
    /// user's, so any live session may use its answer.
    public static func channelCompanion(_ url: String) -> SessionCompanion<CollectionChannel?> {
        SessionCompanion(userKey: nil, query: channelQuery(url), decode: decodeChannelLookup)
    }

    static func channelQuery(_ url: String) -> PostgresQuery {
        "SELECT key, kind, name, cover_url, custom_type, url FROM channels WHERE url = \(url)"
    }

    /// The channel in the rows of `channelQuery`; `nil` when there is no such channel.
    static func decodeChannelLookup(_ rows: PostgresResult) throws -> CollectionChannel? {
        try rows.first.map(Self.decodeChannel)
    }

    /// What a read of a collection sees, all from one snapshot.
    public struct Snapshot: Sendable {
        public var state: ChannelState
        /// The user's unread notifications across all channels.
        public var badge: Int64
        /// Every change below this transaction id is finished: positions `< through(horizon - 1)`
        /// are complete in this snapshot.
        public var horizon: Int64
        /// The newest transaction id that can exist: a position beyond it was not issued by this
        /// database (a restore into another cluster, for example).
        public var nextXID: Int64
        /// Tombstones below this position may have been removed: older positions are not live.
        public var compactedThrough: Int64
    }

    /// The answer to one incremental poll.
    public struct Poll: Sendable {
        public var channel: CollectionChannel
        public var snapshot: Snapshot
        public var changes: [(position: ChangePosition, change: CollectionChange)]
    }

    /// What an incremental poll asks for. Two polls with equal requests run the same statement.
    public struct PollRequest: Sendable, Hashable {
        public var userKey: Int64
        public var channelURL: String
        public var filter: CollectionFilter
        public var position: ChangePosition
        /// The most changes to return (0: the channel and snapshot only).
        public var limit: Int

        public init(userKey: Int64, channelURL: String, filter: CollectionFilter, after position: ChangePosition, limit: Int) {
            self.userKey = userKey
            self.channelURL = channelURL
            self.filter = filter
            self.position = position
            self.limit = limit
        }
    }

    /// One incremental poll in a single statement (so a single snapshot, without a transaction, and
    /// the channel looked up by URL in the same round trip): the snapshot values and up to `limit`
    /// changes after `position` below the horizon, in position order. `nil` when there is no such
    /// channel.
    public func poll(_ request: PollRequest) async throws -> Poll? {
        try Self.decodePoll(try await client.pipelinedQuery(Self.pollQuery(request)))
    }

    /// The statement of `poll`, to be sent with a session check (see
    /// `SessionStore.authenticate(_:alongside:)`): the request's user key comes from a signed sync
    /// token, and the answer is handed over only if the session turns out to be that user's.
    public static func pollCompanion(_ request: PollRequest) -> SessionCompanion<Poll?> {
        SessionCompanion(userKey: request.userKey, query: pollQuery(request), decode: decodePoll)
    }

    static func pollQuery(_ request: PollRequest) -> PostgresQuery {
        let (userKey, channelURL, filter, position, limit) = (
            request.userKey, request.channelURL, request.filter, request.position, request.limit
        )
        return """
            WITH snap AS MATERIALIZED (
                SELECT one.channel_key, c.kind, c.name, c.cover_url, c.custom_type, c.url, \(Self.snapshotColumns)
                FROM channels c
                CROSS JOIN LATERAL (SELECT \(userKey)::bigint AS user_key, c.key AS channel_key) AS one
                LEFT JOIN channel_states s ON s.user_key = one.user_key AND s.channel_key = one.channel_key
                WHERE c.url = \(channelURL)
            )
            SELECT snap.*, changed.*
            FROM snap LEFT JOIN LATERAL (
                SELECT r.change_xid, \(CollectionFilterSQL.leaves(filter.status)), \(Self.itemColumns)
                FROM notification_recipients r \(Self.notificationOfCopy)
                WHERE r.user_key = \(userKey) AND r.channel_key = snap.channel_key
                    AND (r.change_xid, r.notification_id) > (\(position.xid), \(position.notificationID))
                    AND r.change_xid < snap.horizon
                    AND \(CollectionFilterSQL.category(filter.category))
                ORDER BY r.change_xid, r.notification_id LIMIT \(limit)
            ) AS changed ON true
            """
    }

    /// The poll in the rows of `pollQuery`; `nil` when there is no such channel.
    static func decodePoll(_ rows: PostgresResult) throws -> Poll? {
        guard let first = rows.first else { return nil }
        var column = 0
        let channel = try Self.decodeChannel(first, at: &column)
        let snapshot = try Self.decodeSnapshot(first, at: &column)
        // Then, in every row: the change's position and whether it is a deletion, then the item.
        let change = column
        var changes: [(position: ChangePosition, change: CollectionChange)] = []
        for row in rows {
            guard let xid = try row.decode(column: change, as: Int64?.self) else { continue }
            let deleted = try row.decode(column: change + 1, as: Bool.self)
            var itemColumn = change + 2
            let item = try Self.decodeItem(row, at: &itemColumn)
            changes.append((ChangePosition(xid: xid, notificationID: item.id), deleted ? .deleted(item.id) : .upserted(item)))
        }
        return Poll(channel: channel, snapshot: snapshot, changes: changes)
    }

    /// The newest live notifications (those with an id below `before`, when given), newest first.
    /// One statement, so one snapshot.
    public func page(userKey: Int64, channelKey: Int64, filter: CollectionFilter, before: Int64?, limit: Int) async throws -> [CollectionItem] {
        try await client.query(
            """
            SELECT \(Self.itemColumns) FROM notification_recipients r \(Self.notificationOfCopy)
            WHERE r.user_key = \(userKey) AND r.channel_key = \(channelKey) AND \(CollectionFilterSQL.shows(filter))
                AND r.notification_id < \(before ?? .max)
            ORDER BY r.notification_id DESC LIMIT \(limit)
            """
        ).map(Self.decodeItem)
    }

    /// A first load: the snapshot values and the newest `limit` live notifications, newest first, in
    /// one statement (so from one snapshot, without a transaction's extra round trips).
    public func load(
        userKey: Int64,
        channelKey: Int64,
        filter: CollectionFilter,
        limit: Int
    ) async throws -> (snapshot: Snapshot, items: [CollectionItem]) {
        let rows = try await client.query(
            """
            WITH snap AS MATERIALIZED (
                SELECT \(Self.snapshotColumns)
                FROM (SELECT \(userKey)::bigint AS user_key, \(channelKey)::bigint AS channel_key) AS one
                LEFT JOIN channel_states s ON s.user_key = one.user_key AND s.channel_key = one.channel_key
            )
            SELECT snap.*, page.* FROM snap LEFT JOIN LATERAL (
                SELECT \(Self.itemColumns) FROM notification_recipients r \(Self.notificationOfCopy)
                WHERE r.user_key = \(userKey) AND r.channel_key = \(channelKey) AND \(CollectionFilterSQL.shows(filter))
                ORDER BY r.notification_id DESC LIMIT \(limit)
            ) AS page ON true
            """
        )
        // The snapshot's columns, then the item's (null when the page is empty).
        var itemStart = 0
        let snapshot = try Self.decodeSnapshot(rows[0], at: &itemStart)
        let items = try rows.compactMap { row -> CollectionItem? in
            guard try row.decode(column: itemStart, as: Int64?.self) != nil else { return nil }
            var column = itemStart
            return try Self.decodeItem(row, at: &column)
        }
        return (snapshot, items)
    }

    /// How many changes lie after `position` below the horizon, counting at most `cap` (an index-only
    /// probe bounded by `cap`, never a full count).
    public func pendingChanges(userKey: Int64, channelKey: Int64, after position: ChangePosition, horizon: Int64, cap: Int) async throws -> Int {
        try await client.query(
            """
            SELECT count(*) FROM (
                SELECT 1 FROM notification_recipients
                WHERE user_key = \(userKey) AND channel_key = \(channelKey)
                    AND (change_xid, notification_id) > (\(position.xid), \(position.notificationID)) AND change_xid < \(horizon)
                LIMIT \(cap)
            ) AS pending
            """
        ).first!.decode(Int.self)
    }

    /// `n`, the notification of the copy `r`, looked up by its key for each copy. As a plain join, a
    /// prepared statement's generic plan could merge the user's copies with every notification in id
    /// order: a page of a user whose notifications are old read all the newer ones first, however many
    /// there are (docs/decisions/2026-11-25-copies-looked-up-by-key-and-jit-off.md). The `LIMIT` keeps
    /// the lookup from being flattened into such a join.
    static let notificationOfCopy: PostgresQuery = "CROSS JOIN LATERAL (SELECT * FROM notifications n WHERE n.id = r.notification_id LIMIT 1) AS n"

    // MARK: - Snapshot

    /// What `Snapshot` holds, as columns over `one` (user and channel keys) left-joined to the
    /// channel state `s`: unread, last read, last seen, reset count, badge, then the snapshot's
    /// position. Read by `decodeSnapshot`.
    static let snapshotColumns: PostgresQuery = """
        coalesce(s.unread_adjustment, 0) + \(UnreadSQL.broadcastsReaching(user: "one.user_key", channel: "one.channel_key")) AS unread_count,
        s.last_read_at, s.last_seen_at, s.reset_count, \(UnreadSQL.badge(user: "one.user_key")) AS badge, \(ChangePositionSQL.snapshotPosition)
        """

    /// The columns of `snapshotColumns`, from `column` on; `column` moves past them.
    static func decodeSnapshot(_ row: PostgresRow, at column: inout Int) throws -> Snapshot {
        let state = ChannelState(
            unreadCount: try row.decode(column: column, as: Int64?.self) ?? 0,
            lastReadAt: try row.decode(column: column + 1, as: Date?.self),
            lastSeenAt: try row.decode(column: column + 2, as: Date?.self),
            resetCount: try row.decode(column: column + 3, as: Int32?.self) ?? 0
        )
        let badge = try row.decode(column: column + 4, as: Int64.self)
        column += 5
        let position = try ChangePositionSQL.decodeSnapshotPosition(row, at: &column)
        return Snapshot(
            state: state,
            badge: badge,
            horizon: position.horizon,
            nextXID: position.nextXID,
            compactedThrough: position.compactedThrough
        )
    }

    // MARK: - Rows

    static let itemColumns: PostgresQuery = """
        n.id, n.template_key, n.template_version, \(TranslationSQL.data), n.category, n.tags, n.event_deadline, \
        n.created_at, n.updated_at, r.status, r.change_xid, r.archived, \(TranslationSQL.actions), coalesce(r.actions_done, '{}')
        """

    /// How many columns `itemColumns` names.
    static let itemColumnCount = 14

    static func decodeItem(_ row: PostgresRow) throws -> CollectionItem {
        var column = 0
        return try decodeItem(row, at: &column)
    }

    /// The columns of `itemColumns`, from `column` on; `column` moves past them.
    static func decodeItem(_ row: PostgresRow, at column: inout Int) throws -> CollectionItem {
        defer { column += Self.itemColumnCount }
        return CollectionItem(
            id: try row.decode(column: column, as: Int64.self),
            templateKey: try row.decode(column: column + 1, as: String.self),
            templateVersion: try row.decode(column: column + 2, as: Int.self),
            data: try row.decode(column: column + 3, as: PostgresJSONB.self),
            category: try row.decode(column: column + 4, as: String.self),
            tags: try row.decode(column: column + 5, as: [String].self),
            eventDeadline: try row.decode(column: column + 6, as: Date?.self),
            createdAt: try row.decode(column: column + 7, as: Date.self),
            updatedAt: try row.decode(column: column + 8, as: Date.self),
            status: CollectionItem.Status(rawValue: try row.decode(column: column + 9, as: Int16.self)) ?? .sent,
            archived: try row.decode(column: column + 11, as: Bool.self),
            actions: try row.decode(column: column + 12, as: PostgresJSONB.self),
            actionsDone: try row.decode(column: column + 13, as: [String].self),
            position: try row.decode(column: column + 10, as: Int64.self)
        )
    }

    static func decodeChannel(_ row: PostgresRow) throws -> CollectionChannel {
        var column = 0
        return try decodeChannel(row, at: &column)
    }

    /// A channel as key, kind, name, cover URL, custom type and URL, from `column` on; `column` moves
    /// past them.
    static func decodeChannel(_ row: PostgresRow, at column: inout Int) throws -> CollectionChannel {
        defer { column += 6 }
        return CollectionChannel(
            key: try row.decode(column: column, as: Int64.self),
            url: try row.decode(column: column + 5, as: String.self),
            kind: Channel.Kind(rawValue: try row.decode(column: column + 1, as: String.self)) ?? .feed,
            name: try row.decode(column: column + 2, as: String.self),
            coverURL: try row.decode(column: column + 3, as: String.self),
            customType: try row.decode(column: column + 4, as: String.self)
        )
    }
}
