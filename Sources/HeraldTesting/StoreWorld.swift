import Foundation
import HeraldCore
import HeraldStore

/// A small world in a test database, made through the stores as the admin API makes it: the template
/// `plain` (one required string variable, `title`, shown as the data's title), channels of the category
/// `news`, users; and sends, with the stores the tests drive.
public struct StoreWorld: Sendable {
    /// The tests' template: a title, and two buttons (one the app handles, one with a URL).
    public static let template = Template(
        key: "plain",
        name: "Plain",
        variables: [.init(name: "title", type: .string, required: true)],
        data: .object(["title": .string("{{title}}")]),
        actions: [.init(id: "ack", label: "Got it"), .init(id: "open", label: "Open {{title}}", url: "https://example.com/open")]
    )

    public let db: TestDatabase
    public let notifications: NotificationStore
    public let collections: CollectionStore
    /// Users' keys by id, and channels' keys by URL.
    public private(set) var users: [String: Int64] = [:]
    public private(set) var channels: [String: Int64] = [:]

    /// The template, feed channels at `channels` (each URL with its retention; `nil` keeps for ever)
    /// and `users`.
    public static func make(
        _ db: TestDatabase,
        channels: [(url: String, retention: String?)] = [("feed", nil)],
        users: [String]
    ) async throws
        -> StoreWorld
    {
        var world = StoreWorld(db: db, notifications: NotificationStore(client: db.client), collections: CollectionStore(client: db.client))
        _ = try await TemplateStore(client: db.client).put(template)
        for (url, retention) in channels {
            let category = Channel.Category(id: "news", name: "News", isDefault: true)
            _ = try await ChannelStore(client: db.client).put(Channel(url: url, kind: .feed, name: url, categories: [category], retention: retention))
            guard let channel = try await world.collections.channel(url) else { throw StoreWorldError("channel \(url) was not stored") }
            world.channels[url] = channel.key
        }
        for user in users { try await world.addUser(user) }
        return world
    }

    private init(db: TestDatabase, notifications: NotificationStore, collections: CollectionStore) {
        self.db = db
        self.notifications = notifications
        self.collections = collections
    }

    public mutating func addUser(_ id: String) async throws {
        _ = try await UserStore(client: db.client).upsert(id: id, nickname: nil, profileURL: nil)
        guard let key = try await UserStore(client: db.client).key(id) else { throw StoreWorldError("user \(id) was not stored") }
        users[id] = key
    }

    public func key(_ user: String) throws -> Int64 {
        guard let key = users[user] else { throw StoreWorldError("no user \(user) in this world") }
        return key
    }

    public func channelKey(_ url: String) throws -> Int64 {
        guard let key = channels[url] else { throw StoreWorldError("no channel \(url) in this world") }
        return key
    }

    /// Sends `title` to `audience` in `channel`, as `POST /v1/notifications` does; `ownTitles` are
    /// per-user variables.
    @discardableResult
    public func send(
        _ title: String,
        to audience: Audience,
        in channel: String = "feed",
        ownTitles: [String: String] = [:],
        expiresAt: Date? = nil
    ) async throws -> StoredNotification {
        try await Self.send(title, to: audience, in: channel, ownTitles: ownTitles, expiresAt: expiresAt, on: db)
    }

    /// A send of the template `plain` (which must be stored) in `db`, outside any world.
    @discardableResult
    public static func send(
        _ title: String,
        to audience: Audience,
        in channel: String,
        category: String = "news",
        ownTitles: [String: String] = [:],
        expiresAt: Date? = nil,
        on db: TestDatabase
    ) async throws -> StoredNotification {
        let variables: [String: JSONValue] = ["title": .string(title)]
        let content = try template.renderNotification(
            variables: variables,
            userVariables: ownTitles.mapValues { ["title": JSONValue.string($0)] }
        )
        let draft = NotificationDraft(
            channelURL: channel,
            templateKey: "plain",
            templateVersion: 1,
            variables: variables,
            content: content,
            category: category,
            tags: [],
            eventDeadline: nil,
            push: PushOptions(),
            audience: audience,
            expiresAt: expiresAt
        )
        let outcome = try await NotificationStore(client: db.client).send(draft, idempotency: nil) { _ in StoredResponse(status: 201, body: []) }
        guard case .created(let stored, _, _) = outcome else { throw StoreWorldError("the send was not created") }
        return stored
    }

    /// The user's unread count in the channel, as the store answers it.
    public func unread(_ user: String, in channel: String = "feed") async throws -> Int64 {
        try await collections.liveState(userKey: try key(user), channelKey: try channelKey(channel)).state.unreadCount
    }
}

/// A step of making a `StoreWorld` that did not do what it should.
public struct StoreWorldError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
