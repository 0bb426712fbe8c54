import Foundation
import HeraldCore
import Postgres

/// One user's copy of a changed notification, as a live event shows it.
public struct LiveCopy: Sendable, Equatable {
    public var userKey: Int64
    /// The copy's position in the user's change stream (what a sync would order it by).
    public var position: Int64
    public var change: CollectionChange
}

extension CollectionStore {
    /// The channel, by key.
    public func channel(key: Int64) async throws -> CollectionChannel? {
        try await client.query(
            "SELECT key, kind, name, cover_url, custom_type, url FROM channels WHERE key = \(key)"
        ).first.map(Self.decodeChannel)
    }

    /// The current copies of notification `id` for those of `userKeys` who have one. Read after the
    /// change committed, so each shows at least that change (or a later one).
    public func liveCopies(notificationID id: Int64, channelKey: Int64, userKeys: [Int64]) async throws -> [LiveCopy] {
        guard !userKeys.isEmpty else { return [] }
        return try await client.query(
            """
            SELECT r.user_key, r.change_xid, r.deleted, \(Self.itemColumns)
            FROM unnest(\(userKeys)::int8[]) AS k(user_key)
            JOIN notification_recipients r ON r.user_key = k.user_key AND r.channel_key = \(channelKey) AND r.notification_id = \(id)
            JOIN notifications n ON n.id = r.notification_id
            """
        ).map { row in
            let (user, position, deleted) = (
                try row.decode(column: 0, as: Int64.self), try row.decode(column: 1, as: Int64.self), try row.decode(column: 2, as: Bool.self)
            )
            var itemColumn = 3
            return LiveCopy(userKey: user, position: position, change: deleted ? .deleted(id) : .upserted(try Self.decodeItem(row, at: &itemColumn)))
        }
    }

    /// The user's state in the channel and the position of the newest change in it (0 when none).
    public func liveState(userKey: Int64, channelKey: Int64) async throws -> (state: ChannelState, position: Int64) {
        let row = try await client.query(
            """
            SELECT coalesce(s.unread_adjustment, 0) + \(UnreadSQL.broadcastsReaching(user: "one.user_key", channel: "one.channel_key")),
                s.last_read_at, s.last_seen_at, coalesce(s.reset_count, 0),
                coalesce((SELECT max(change_xid) FROM notification_recipients WHERE user_key = one.user_key AND channel_key = one.channel_key), 0)
            FROM (SELECT \(userKey)::bigint AS user_key, \(channelKey)::bigint AS channel_key) AS one
            LEFT JOIN channel_states s ON s.user_key = one.user_key AND s.channel_key = one.channel_key
            """
        ).first!
        let (unread, lastRead, lastSeen, resetCount, position) = try row.decode((Int64, Date?, Date?, Int32, Int64).self)
        return (ChannelState(unreadCount: unread, lastReadAt: lastRead, lastSeenAt: lastSeen, resetCount: resetCount), position)
    }

    /// The positions of the user's copies of `ids` in the channel.
    public func positions(userKey: Int64, channelKey: Int64, ids: [Int64]) async throws -> [Int64: Int64] {
        var positions: [Int64: Int64] = [:]
        for row in try await client.query(
            """
            SELECT notification_id, change_xid FROM notification_recipients
            WHERE user_key = \(userKey) AND channel_key = \(channelKey) AND notification_id = ANY(\(ids))
            """
        ) {
            let (id, position) = try row.decode((Int64, Int64).self)
            positions[id] = position
        }
        return positions
    }

    /// Those of `userKeys` whose channel list shows the channel (`herald_user_channels`).
    ///
    /// The list's own rule decides, for this channel alone, and only for users with a state or a live
    /// copy in it (it lists nothing else): the rule is a function call per user, the check two index
    /// probes, and a process may hold streams of many thousands.
    public func listers(channelKey: Int64, among userKeys: [Int64]) async throws -> [Int64] {
        guard !userKeys.isEmpty else { return [] }
        return try await client.query(
            """
            SELECT k.user_key FROM unnest(\(userKeys)::int8[]) AS k(user_key)
            WHERE (EXISTS (SELECT 1 FROM channel_states s WHERE s.user_key = k.user_key AND s.channel_key = \(channelKey))
                    OR EXISTS (SELECT 1 FROM notification_recipients r
                        WHERE r.user_key = k.user_key AND r.channel_key = \(channelKey) AND NOT r.deleted))
                AND EXISTS (SELECT 1 FROM herald_user_channels(k.user_key, ARRAY[\(channelKey)]::int8[]))
            """
        ).map { try $0.decode(Int64.self) }
    }

    /// Those of `userKeys` whose list the channel `url` left when transaction `xid` deleted it.
    public func removalRecipients(channelURL url: String, xid: Int64, among userKeys: [Int64]) async throws -> [Int64] {
        guard !userKeys.isEmpty else { return [] }
        return try await client.query(
            """
            SELECT user_key FROM channel_list_removals
            WHERE user_key = ANY(\(userKeys)) AND channel_url = \(url) AND change_xid = \(xid)
            """
        ).map { try $0.decode(Int64.self) }
    }
}
