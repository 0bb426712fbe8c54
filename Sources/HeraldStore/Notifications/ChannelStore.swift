import Foundation
import HeraldCore
import Postgres

/// A channel as stored, with its timestamps.
public struct StoredChannel: Sendable, Equatable {
    public var channel: Channel
    public var createdAt: Date
    public var updatedAt: Date
}

/// What a `put` did.
public enum PutOutcome: String, Sendable, Equatable {
    case created, updated, unchanged
}

/// Channels: create or replace, read, list, delete.
public struct ChannelStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// A channel's kind is fixed once created: feeds and chats order and list differently.
    public struct KindChange: Error, Sendable {
        public var existing: Channel.Kind
    }

    /// Creates the channel or replaces its definition. Throws `KindChange` when the kind differs.
    public func put(_ channel: Channel) async throws -> (stored: StoredChannel, outcome: PutOutcome) {
        try await client.withTransaction { connection in
            try await Self.put(channel, on: connection)
        }
    }

    /// `put` inside a caller's transaction (the fixtures loader applies many at once).
    public static func put(_ channel: Channel, on connection: PostgresConnection) async throws -> (stored: StoredChannel, outcome: PutOutcome) {
        // The retention in the form it is read back in (`24h` is `1d`), so that the same definition
        // loaded again is unchanged.
        var channel = channel
        channel.retention = channel.retentionPeriod?.description
        channel.throttle = channel.throttle?.normalized
        let throttle = try channel.throttle.map { try PostgresJSONB(utf8: Array(JSONEncoder().encode($0))) }
        let categories = try PostgresJSONB(utf8: Array(JSONEncoder().encode(channel.categories)))
        let current = try await connection.query("SELECT \(Self.columns) FROM channels WHERE url = \(channel.url) FOR UPDATE")
        if let existing = try current.first.map(decode) {
            guard existing.channel.kind == channel.kind else { throw KindChange(existing: existing.channel.kind) }
            if existing.channel == channel { return (existing, .unchanged) }
        }
        let rows = try await connection.query(
            """
            INSERT INTO channels AS c (url, kind, name, cover_url, custom_type, categories, retention_seconds, throttle, change_xid)
            VALUES (\(channel.url), \(channel.kind.rawValue), \(channel.name), \(channel.coverURL), \(channel.customType), \(categories),
                \(channel.retentionPeriod?.seconds), \(throttle), \(ChangePositionSQL.currentTransactionID))
            ON CONFLICT (url) DO UPDATE SET
                name = EXCLUDED.name, cover_url = EXCLUDED.cover_url, custom_type = EXCLUDED.custom_type,
                categories = EXCLUDED.categories, retention_seconds = EXCLUDED.retention_seconds, throttle = EXCLUDED.throttle, updated_at = now(),
                change_xid = EXCLUDED.change_xid
            RETURNING \(Self.columns), (xmax = 0) AS created, key
            """
        )
        let stored = try decode(rows[0])
        if try rows[0].decode(column: "created", as: Bool.self) { return (stored, .created) }
        // Open streams of the users who list the channel show the new definition (a new channel is
        // in nobody's list yet).
        try await LiveHint.channelChanged(channelKey: try rows[0].decode(column: "key", as: Int64.self)).send(on: connection)
        return (stored, .updated)
    }

    public func get(_ url: String) async throws -> StoredChannel? {
        try await client.query("SELECT \(Self.columns) FROM channels WHERE url = \(url)").first.map(Self.decode)
    }

    /// Channels in URL order, `limit` at a time, starting after `after`.
    public func list(after: String?, limit: Int) async throws -> [StoredChannel] {
        try await client.query(
            "SELECT \(Self.columns) FROM channels WHERE url > \(after ?? "") ORDER BY url LIMIT \(limit)"
        ).map(Self.decode)
    }

    /// Deletes the channel with its notifications and every recipient's copy; false when there was none.
    ///
    /// It is a change every user who had something in the channel must see (their list, their badge),
    /// so, as a send does, the same transaction makes their devices want a refresh push and hints the
    /// live hubs.
    public func delete(_ url: String) async throws -> Bool {
        // Retried on a deadlock: its updates of device rows can cross a dispatcher's.
        try await client.withRetryingTransaction { connection in
            // Nothing may write rows for the channel between the deletes below and the commit, or they
            // would outlive it (a user's channel state counts in their badge): lock the channel, which a
            // send's foreign-key check waits for, and its notifications, so that a fan-out or folding
            // batch in flight commits first and later ones skip them. Each statement below then sees
            // what those batches wrote.
            guard let key = try await connection.query("SELECT key FROM channels WHERE url = \(url) FOR UPDATE").first?.decode(Int64.self) else {
                return false
            }
            try await connection.query("SELECT count(*) FROM (SELECT 1 FROM notifications WHERE channel_key = \(key) FOR UPDATE) AS locked")
            let xid = try await NotificationStore.currentTransactionID(on: connection)
            // Recipient rows carry no foreign key (it would slow every fan-out), so they go explicitly;
            // the notifications follow by cascade. Every user who had copies or a state leaves a removal
            // behind, so that their channel list's change log can say the channel is gone (`sql/0014`),
            // and their devices want a refresh (answered, like a send's, by a sync after this commits).
            try await connection.query(
                """
                WITH copies AS (
                    DELETE FROM notification_recipients WHERE notification_id IN (SELECT id FROM notifications WHERE channel_key = \(key))
                    RETURNING user_key
                ), states AS (
                    DELETE FROM channel_states WHERE channel_key = \(key) RETURNING user_key
                ), users AS (
                    SELECT user_key FROM copies UNION SELECT user_key FROM states
                ), removals AS (
                    INSERT INTO channel_list_removals (user_key, channel_url, change_xid)
                    SELECT user_key, \(url), \(xid) FROM users
                    ON CONFLICT (user_key, channel_url) DO UPDATE SET change_xid = EXCLUDED.change_xid
                )
                -- A want that named one of the channel's notifications no longer can (a receipt for it
                -- would name nothing).
                UPDATE device_push_state p SET wanted_xid = \(xid),
                    notification_id = CASE WHEN p.notification_id IN (SELECT id FROM notifications WHERE channel_key = \(key))
                        THEN NULL ELSE p.notification_id END
                FROM users JOIN devices d ON d.user_key = users.user_key WHERE p.device_id = d.id
                """
            )
            let deleted = try await connection.query("DELETE FROM channels WHERE key = \(key)").affectedRows == 1
            try await connection.query(
                "SELECT pg_notify(\(PushStore.wakeChannel), ''), pg_notify(\(LiveHint.channel), \(LiveHint.channelDeleted(url: url, xid: xid).payload) || ' @' || \(xid))"
            )
            return deleted
        }
    }

    // MARK: - Rows

    static let columns: PostgresQuery = "url, kind, name, cover_url, custom_type, categories, created_at, updated_at, retention_seconds, throttle"

    static func decode(_ row: PostgresRow) throws -> StoredChannel {
        let (url, kind, name, coverURL, customType, categories, createdAt, updatedAt, retention) =
            try row.decode((String, String, String, String, String, PostgresJSONB, Date, Date, Int64?).self)
        let channel = Channel(
            url: url,
            kind: Channel.Kind(rawValue: kind) ?? .feed,
            name: name,
            coverURL: coverURL,
            customType: customType,
            categories: try JSONDecoder().decode([Channel.Category].self, from: Data(categories.utf8)),
            retention: retention.flatMap(RetentionPeriod.init(seconds:))?.description,
            throttle: try row.decode(column: 9, as: PostgresJSONB?.self).map { try JSONDecoder().decode(Throttle.self, from: Data($0.utf8)) }
        )
        return StoredChannel(channel: channel, createdAt: createdAt, updatedAt: updatedAt)
    }
}
