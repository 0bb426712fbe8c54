import Foundation
import GRDB

/// What the client keeps between runs of one user, in SQLite (GRDB), one file per user (the client
/// names it; see `HeraldClient.Configuration.cacheDirectory`): each collection's notifications, token,
/// cursor and state, the channel list with its token, the unread counts and the device token. A cold
/// start shows the last state before any request, and each collection resumes from its saved token:
/// what changed meanwhile comes by the sync like any other change.
///
/// Writes follow each applied answer, one transaction each, and touch only the notifications that
/// changed. A write that fails is dropped: the cache is a copy, and the server remains the truth. A
/// write is not cancelled with the task that asked for it (a stream closing as the app goes to the
/// background): what is shown must be what is saved.
final class HeraldCache: Sendable {
    private let queue: DatabaseQueue

    /// Opens (or creates) the cache at `url`, creating its directory when missing: on a fresh
    /// install not even Application Support exists yet.
    init(url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        var configuration = Configuration()
        // Another process (the app's extension, a client being replaced) may hold the file a moment.
        configuration.busyMode = .timeout(5)
        queue = try DatabaseQueue(path: url.path, configuration: configuration)
        try Self.migrator.migrate(queue)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE collection (
                        key TEXT PRIMARY KEY NOT NULL,
                        token TEXT,
                        previous_cursor TEXT,
                        has_previous INTEGER NOT NULL,
                        synced_through INTEGER NOT NULL,
                        state BLOB NOT NULL,
                        channel BLOB,
                        removed BLOB NOT NULL
                    );
                    CREATE TABLE notification (
                        collection TEXT NOT NULL,
                        id INTEGER NOT NULL,
                        body BLOB NOT NULL,
                        PRIMARY KEY (collection, id)
                    );
                    CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL);
                    """
            )
        }
        return migrator
    }

    // MARK: - Collections

    /// The collection's row: taken on the main actor to be written, or read back.
    private struct Header: Sendable {
        var key: String
        var token: String?
        var previousCursor: String?
        var hasPrevious: Bool
        var syncedThrough: Int64
        var state: Data
        var channel: Data?
        var removed: Data

        @MainActor init(_ collection: NotificationCollection) {
            let encoder = JSONEncoder()
            key = collection.key.text
            token = collection.token
            previousCursor = collection.previousCursor
            hasPrevious = collection.hasPrevious
            syncedThrough = collection.syncedThrough
            state = (try? encoder.encode(collection.state)) ?? Data()
            channel = collection.channel.flatMap { try? encoder.encode($0) }
            removed = (try? encoder.encode(collection.removedAt)) ?? Data()
        }

        init(_ row: Row) {
            key = row["key"]
            token = row["token"]
            previousCursor = row["previous_cursor"]
            hasPrevious = row["has_previous"]
            syncedThrough = row["synced_through"]
            state = row["state"]
            channel = row["channel"]
            removed = row["removed"]
        }

        func write(_ db: Database) throws {
            try db.execute(
                sql: """
                    INSERT INTO collection (key, token, previous_cursor, has_previous, synced_through, state, channel, removed)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (key) DO UPDATE SET token = excluded.token, previous_cursor = excluded.previous_cursor,
                        has_previous = excluded.has_previous, synced_through = excluded.synced_through, state = excluded.state,
                        channel = excluded.channel, removed = excluded.removed
                    """,
                arguments: [key, token, previousCursor, hasPrevious, syncedThrough, state, channel, removed]
            )
        }
    }

    /// Saves the collection's header and the given versions, and drops `removed`. The versions are
    /// encoded on the database's queue, not the main thread.
    @MainActor func save(_ collection: NotificationCollection, upserted: [HeraldNotification], removed: [String]) async {
        let header = Header(collection)
        await write { db in
            try header.write(db)
            let encoder = JSONEncoder()
            for notification in upserted {
                guard let body = try? encoder.encode(notification) else { continue }
                try db.execute(
                    sql: "INSERT OR REPLACE INTO notification (collection, id, body) VALUES (?, ?, ?)",
                    arguments: [header.key, notification.number, body]
                )
            }
            for id in removed {
                try db.execute(sql: "DELETE FROM notification WHERE collection = ? AND id = ?", arguments: [header.key, Int64(id) ?? 0])
            }
        }
    }

    /// Saves the header only (a seen mark).
    @MainActor func saveMeta(_ collection: NotificationCollection) async {
        await save(collection, upserted: [], removed: [])
    }

    /// Replaces everything saved of the collection with what it holds (after a reload).
    @MainActor func replace(_ collection: NotificationCollection) async {
        let key = collection.key.text
        await write { db in
            try db.execute(sql: "DELETE FROM notification WHERE collection = ?", arguments: [key])
        }
        await save(collection, upserted: collection.notifications, removed: [])
    }

    /// Fills a new collection with what was saved of it, if anything and if nothing was loaded into it
    /// meanwhile; the rows are read and decoded on the database's queue.
    @MainActor func restore(_ collection: NotificationCollection) async {
        let key = collection.key.text
        let found = try? await queue.read { db -> (header: Header, notifications: [HeraldNotification])? in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM collection WHERE key = ?", arguments: [key]) else { return nil }
            let bodies = try Data.fetchAll(db, sql: "SELECT body FROM notification WHERE collection = ? ORDER BY id DESC", arguments: [key])
            let decoder = JSONDecoder()
            return (Header(row), bodies.compactMap { try? decoder.decode(HeraldNotification.self, from: $0) })
        }
        // Loaded meanwhile (a sync's answer is newer than anything saved): the cache has nothing to add.
        guard let (saved, notifications) = found ?? nil, collection.token == nil, collection.loads == 0 else { return }
        let decoder = JSONDecoder()
        collection.notifications = notifications
        collection.token = saved.token
        collection.previousCursor = saved.previousCursor
        collection.hasPrevious = saved.hasPrevious
        collection.syncedThrough = saved.syncedThrough
        if let state = try? decoder.decode(ChannelState.self, from: saved.state) { collection.state = state }
        collection.channel = saved.channel.flatMap { try? decoder.decode(ChannelInfo.self, from: $0) }
        // Kept before positions were: every one was a deletion, for good.
        collection.removedAt =
            (try? decoder.decode([String: Int64].self, from: saved.removed))
            ?? Dictionary(uniqueKeysWithValues: ((try? decoder.decode([String].self, from: saved.removed)) ?? []).map { ($0, Int64.max) })
        collection.isLive = saved.token != nil
    }

    // MARK: - The rest

    struct Meta: Sendable {
        var deviceToken: String?
        var unread: UnreadCounts?
        var channelList: ChannelList.Snapshot?
    }

    /// What was saved besides the collections; `nil` when it cannot be read.
    func loadMeta() async -> Meta? {
        try? await queue.read { db in
            let decoder = JSONDecoder()
            func value(_ name: String) throws -> Data? {
                try Data.fetchOne(db, sql: "SELECT value FROM meta WHERE name = ?", arguments: [name])
            }
            return Meta(
                deviceToken: try value("device_token").map { String(decoding: $0, as: UTF8.self) },
                unread: try value("unread").flatMap { try? decoder.decode(UnreadCounts.self, from: $0) },
                channelList: try value("channel_list").flatMap { try? decoder.decode(ChannelList.Snapshot.self, from: $0) }
            )
        }
    }

    func saveUnread(_ unread: UnreadCounts) async {
        await put("unread", try? JSONEncoder().encode(unread))
    }

    func saveChannelList(_ snapshot: ChannelList.Snapshot) async {
        await put("channel_list", try? JSONEncoder().encode(snapshot))
    }

    func saveDeviceToken(_ token: String?) async {
        await put("device_token", token.map { Data($0.utf8) })
    }

    /// Closes the file once the writes under way have ended.
    func close() async {
        let queue = self.queue
        await Task { try? queue.close() }.value
    }

    /// Deletes the cache file at `url` with SQLite's companions (`-wal`, `-shm`, `-journal`).
    static func delete(at url: URL) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            try? FileManager.default.removeItem(at: URL(fileURLWithPath: url.path + suffix))
        }
    }

    /// One write transaction, queued on the database before this suspends — so writes land in the
    /// order they were asked for on the caller's actor (a removal is never overtaken by the save
    /// before it) — and finished even if the calling task is cancelled.
    nonisolated(nonsending) private func write(_ updates: @escaping @Sendable (Database) throws -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.asyncWrite(updates) { _, _ in continuation.resume() }
        }
    }

    private func put(_ name: String, _ value: Data?) async {
        await write { db in
            if let value {
                try db.execute(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", arguments: [name, value])
            } else {
                try db.execute(sql: "DELETE FROM meta WHERE name = ?", arguments: [name])
            }
        }
    }
}
