import Foundation
import HeraldCore
import Postgres

/// A channel in the user's channel list.
public struct ChannelListEntry: Sendable {
    public var channel: CollectionChannel
    public var unreadCount: Int64
    public var lastActivityAt: Date
    /// Chat channels only: the newest live notification.
    public var lastNotification: CollectionItem?
}

/// The user's channel list, whole or as the changes since a horizon, all from one snapshot.
public struct ChannelList: Sendable {
    /// Chat channels newest activity first, then feed channels by URL: all of them, or only those
    /// that changed.
    public var entries: [ChannelListEntry]
    /// Changes only: the URLs of channels that left the list (never one that is in `entries`).
    public var removed: [String]
    /// Every change below this was complete in this snapshot: the next change log starts here.
    public var horizon: Int64
    /// The first transaction id not yet assigned when the snapshot was taken.
    public var nextXID: Int64
    /// Positions below this may have lost their tombstones (see `compact`).
    public var compactedThrough: Int64
}

extension CollectionStore {
    /// The channels the user has notifications in or has opened (`herald_user_channels`): all of them
    /// (`changedSince == nil`), or the change log since a horizon — the entries that changed at or
    /// above it and the channels that left the list.
    ///
    /// The change log reads the same positions as the collections (`sql/0014`): a change counts when
    /// its transaction id is at or above the token's horizon and below this snapshot's, the snapshot's
    /// `xmin`. Every transaction below that has ended, so a change that commits late is never passed
    /// over: its id is at or above this horizon, which the next token starts from. Entries go out whole,
    /// so reporting one again (a change visible here but above the horizon comes again next time)
    /// costs the client nothing.
    public func channelList(userKey: Int64, changedSince: Int64? = nil) async throws -> ChannelList {
        let rows = try await client.query(Self.channelListQuery(userKey: userKey, changedSince: changedSince))
        var list = ChannelList(entries: [], removed: [], horizon: 0, nextXID: 0, compactedThrough: 0)
        for row in rows {
            // Every row: the entry's columns (null when nothing is listed) — the channel, unread, last
            // activity and the last notification — then the snapshot's position and the removed URLs.
            var column = 0
            let channel = try row.decode(column: 0, as: Int64?.self) == nil ? nil : try Self.decodeChannel(row, at: &column)
            column = 6
            let unread = try row.decode(column: column, as: Int64?.self)
            let lastActivityAt = try row.decode(column: column + 1, as: Date?.self)
            column += 2
            let lastNotification = try row.decode(column: column, as: Int64?.self) == nil ? nil : try Self.decodeItem(row, at: &column)
            column = Self.channelListEntryColumnCount
            let position = try ChangePositionSQL.decodeSnapshotPosition(row, at: &column)
            (list.horizon, list.nextXID, list.compactedThrough) = (position.horizon, position.nextXID, position.compactedThrough)
            list.removed = try row.decode(column: column, as: [String]?.self) ?? []
            guard let channel, let unread, let lastActivityAt else { continue }
            list.entries.append(
                ChannelListEntry(channel: channel, unreadCount: unread, lastActivityAt: lastActivityAt, lastNotification: lastNotification)
            )
        }
        return list
    }

    /// The entry's columns in a row of `channelListSelect`: the channel's 6, unread, last activity,
    /// and the last notification's (`itemColumns`).
    static let channelListEntryColumnCount = 8 + CollectionStore.itemColumnCount

    /// One statement, so one snapshot. The whole list and the change log are two texts (each keeps a
    /// plan of its own) around the same constant parts: the snapshot `snap`, and the final select over
    /// the listed channels `u` and the URLs `removed`.
    static func channelListQuery(userKey: Int64, changedSince: Int64?) -> PostgresQuery {
        guard let since = changedSince else {
            return """
                WITH snap AS (\(channelListSnapshot)),
                u AS (SELECT \(userKey)::bigint AS user_key, h.channel_key, h.unread FROM herald_user_channels(\(userKey)) AS h),
                removed AS (SELECT NULL::text AS url WHERE false)
                \(channelListSelect)
                """
        }
        return """
            WITH RECURSIVE snap AS (\(channelListSnapshot)),
            -- The channels the user has copies in (tombstones too): a loose scan of the changes index, one
            -- probe per channel rather than a row per copy.
            held(channel_key) AS (
                SELECT min(channel_key) FROM notification_recipients WHERE user_key = \(userKey)
                UNION ALL
                SELECT (SELECT min(r.channel_key) FROM notification_recipients r WHERE r.user_key = \(userKey) AND r.channel_key > held.channel_key)
                FROM held WHERE held.channel_key IS NOT NULL
            ),
            -- Channels with a copy changed, or opened, in the window.
            touched(channel_key) AS (
                -- A lateral probe with LIMIT, not EXISTS: the planner would turn EXISTS into a semi-join
                -- that reads every copy of the user's.
                SELECT held.channel_key FROM held CROSS JOIN snap CROSS JOIN LATERAL (
                    SELECT 1 FROM notification_recipients r WHERE r.user_key = \(userKey) AND r.channel_key = held.channel_key
                        AND r.change_xid >= \(since) AND r.change_xid < snap.horizon
                    LIMIT 1
                ) AS probe
                WHERE held.channel_key IS NOT NULL
                UNION
                SELECT s.channel_key FROM channel_states s, snap
                WHERE s.user_key = \(userKey) AND s.opened_xid >= \(since) AND s.opened_xid < snap.horizon
            ),
            -- Renamed channels: a change of the entries of the users who list them, and no one else's.
            renamed(channel_key) AS (
                SELECT c.key FROM channels c, snap WHERE c.change_xid >= \(since) AND c.change_xid < snap.horizon
            ),
            dropped(channel_url) AS (
                SELECT g.channel_url FROM channel_list_removals g, snap
                WHERE g.user_key = \(userKey) AND g.change_xid >= \(since) AND g.change_xid < snap.horizon
            ),
            -- The list's entries among the channels above only: the list's rule with its unread counts
            -- for the few channels that changed, not for every channel of the user's.
            listing AS (
                SELECT \(userKey)::bigint AS user_key, h.channel_key, h.unread FROM herald_user_channels(\(userKey), ARRAY(
                    SELECT channel_key FROM touched UNION SELECT channel_key FROM renamed
                    UNION SELECT c.key FROM dropped JOIN channels c ON c.url = dropped.channel_url
                )) AS h
            ),
            changed(channel_key) AS (
                SELECT channel_key FROM touched
                UNION
                SELECT channel_key FROM listing WHERE channel_key IN (SELECT channel_key FROM renamed)
            ),
            u AS (SELECT * FROM listing WHERE channel_key IN (SELECT channel_key FROM changed)),
            removed AS (
                SELECT c.url FROM changed JOIN channels c ON c.key = changed.channel_key
                WHERE changed.channel_key NOT IN (SELECT channel_key FROM listing)
                UNION
                SELECT d.channel_url FROM dropped d
                WHERE d.channel_url NOT IN (SELECT c.url FROM listing JOIN channels c ON c.key = listing.channel_key)
            )
            \(channelListSelect)
            """
    }

    /// The snapshot's horizon, next transaction id and compaction bound.
    static let channelListSnapshot: PostgresQuery = "SELECT \(ChangePositionSQL.snapshotPosition)"

    /// Every listed channel of `u` (user key, channel key, unread) as a row, with the snapshot's
    /// columns and the removed URLs after it; one row of only those when `u` is empty.
    static let channelListSelect: PostgresQuery = """
        SELECT c.key, c.kind, c.name, c.cover_url, c.custom_type, c.url, u.unread, activity.at,
            last.id, last.template_key, last.template_version, last.data, last.category, last.tags,
            last.event_deadline, last.created_at, last.updated_at, last.status, last.change_xid, last.archived, last.actions, last.actions_done,
            snap.horizon, snap.next_xid, snap.compacted, (SELECT array_agg(url ORDER BY url) FROM removed)
        FROM snap
        LEFT JOIN u ON true
        LEFT JOIN channels c ON c.key = u.channel_key
        LEFT JOIN channel_states s ON s.user_key = u.user_key AND s.channel_key = c.key
        LEFT JOIN LATERAL (
            SELECT coalesce(greatest(s.last_activity_at, (SELECT max(b.created_at) FROM notifications b
                WHERE b.channel_key = c.key AND \(UnreadSQL.countedBroadcast("b", reaching: "u.user_key")))),
                'epoch'::timestamptz) AS at
        ) AS activity ON true
        LEFT JOIN LATERAL (
            SELECT n.id, n.template_key, n.template_version, \(TranslationSQL.data) AS data, n.category, n.tags,
                n.event_deadline, n.created_at, n.updated_at, r.status, r.change_xid, r.archived,
                \(TranslationSQL.actions) AS actions, coalesce(r.actions_done, '{}') AS actions_done
            FROM notification_recipients r \(CollectionStore.notificationOfCopy)
            WHERE c.kind = 'chat' AND r.user_key = u.user_key AND r.channel_key = c.key AND NOT r.deleted
            ORDER BY r.notification_id DESC LIMIT 1
        ) AS last ON true
        ORDER BY c.kind = 'chat' DESC, CASE WHEN c.kind = 'chat' THEN activity.at END DESC, c.url
        """
}
