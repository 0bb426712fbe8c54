import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import Postgres

/// A notification in a user's collection.
struct NotificationItem: Encodable {
    var id: String
    var templateKey: String
    var templateVersion: Int
    var data: RawJSON
    var category: String
    var tags: [String]
    var eventDeadline: String?
    var status: String
    var createdAt: String
    var createdAtMS: Int64
    var updatedAt: String
    var updatedAtMS: Int64

    init(_ item: CollectionItem, raw: inout [[UInt8]]) {
        id = String(item.id)
        templateKey = item.templateKey
        templateVersion = item.templateVersion
        data = RawJSON.add(item.data, to: &raw)
        category = item.category
        tags = item.tags
        eventDeadline = item.eventDeadline.map(RFC3339.string)
        status = item.status.name
        createdAt = RFC3339.string(from: item.createdAt)
        createdAtMS = Int64((item.createdAt.timeIntervalSince1970 * 1000).rounded(.down))
        updatedAt = RFC3339.string(from: item.updatedAt)
        updatedAtMS = Int64((item.updatedAt.timeIntervalSince1970 * 1000).rounded(.down))
    }

    enum CodingKeys: String, CodingKey {
        case id
        case templateKey = "template_key"
        case templateVersion = "template_version"
        case data, category, tags
        case eventDeadline = "event_deadline"
        case status
        case createdAt = "created_at"
        case createdAtMS = "created_at_ms"
        case updatedAt = "updated_at"
        case updatedAtMS = "updated_at_ms"
    }
}

/// The user's state in a channel.
struct StateBody: ResponseEncodable {
    var unreadCount: Int64
    var lastReadAt: String?
    var lastSeenAt: String?

    init(_ state: ChannelState) {
        unreadCount = state.unreadCount
        lastReadAt = state.lastReadAt.map(RFC3339.string)
        lastSeenAt = state.lastSeenAt.map(RFC3339.string)
    }

    enum CodingKeys: String, CodingKey {
        case unreadCount = "unread_count"
        case lastReadAt = "last_read_at"
        case lastSeenAt = "last_seen_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(unreadCount, forKey: .unreadCount)
        // Present as null, not absent: clients read "never" explicitly.
        try container.encode(lastReadAt, forKey: .lastReadAt)
        try container.encode(lastSeenAt, forKey: .lastSeenAt)
    }
}

/// The answer to a collection request: an initial page or the changes since a token.
struct CollectionBody: Encodable, ResponseGenerator {
    struct ChannelBody: Encodable {
        var channelURL: String
        var kind: String
        var name: String
        var coverURL: String
        var customType: String
        var state: StateBody

        enum CodingKeys: String, CodingKey {
            case channelURL = "channel_url"
            case kind, name
            case coverURL = "cover_url"
            case customType = "custom_type"
            case state
        }
    }

    var isLive: Bool
    var notifications: [NotificationItem] = []
    var deleted: [String] = []
    var nextToken: String?
    var hasMore = false
    var prevCursor: String?
    var channel: ChannelBody
    var badge: Int64
    /// The notifications' data texts.
    var raw: [[UInt8]] = []

    func response(from request: Request, context: some RequestContext) throws -> Response {
        try RawJSON.response(self, texts: raw)
    }

    init(channel: CollectionChannel, snapshot: CollectionStore.Snapshot, isLive: Bool) {
        self.isLive = isLive
        self.channel = ChannelBody(
            channelURL: channel.url, kind: channel.kind.rawValue, name: channel.name, coverURL: channel.coverURL,
            customType: channel.customType, state: StateBody(snapshot.state)
        )
        self.badge = snapshot.badge
    }

    enum CodingKeys: String, CodingKey {
        case isLive = "is_live"
        case notifications, deleted
        case nextToken = "next_token"
        case hasMore = "has_more"
        case prevCursor = "prev_cursor"
        case channel, badge
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(isLive, forKey: .isLive)
        try container.encode(notifications, forKey: .notifications)
        try container.encode(deleted, forKey: .deleted)
        try container.encode(nextToken, forKey: .nextToken)
        try container.encode(hasMore, forKey: .hasMore)
        try container.encode(prevCursor, forKey: .prevCursor)
        try container.encode(channel, forKey: .channel)
        try container.encode(badge, forKey: .badge)
    }
}

/// An older page of a collection.
struct PageBody: Encodable, ResponseGenerator {
    var notifications: [NotificationItem] = []
    var prevCursor: String?
    var raw: [[UInt8]] = []

    func response(from request: Request, context: some RequestContext) throws -> Response {
        try RawJSON.response(self, texts: raw)
    }

    enum CodingKeys: String, CodingKey {
        case notifications
        case prevCursor = "prev_cursor"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(notifications, forKey: .notifications)
        try container.encode(prevCursor, forKey: .prevCursor)
    }
}

/// Total and per-channel unread counts.
struct UnreadBody: ResponseEncodable {
    struct ChannelUnread: Encodable {
        var channelURL: String
        var unreadCount: Int64

        enum CodingKeys: String, CodingKey {
            case channelURL = "channel_url"
            case unreadCount = "unread_count"
        }
    }

    var total: Int64
    var channels: [ChannelUnread]
}

/// The user's channels: chat channels newest activity first, feed channels by URL.
struct ChannelListBody: Encodable, ResponseGenerator {
    struct Entry: Encodable {
        var channelURL: String
        var kind: String
        var name: String
        var coverURL: String
        var customType: String
        var unreadCount: Int64
        var lastActivityAt: String
        var lastNotification: NotificationItem?

        init(_ entry: ChannelListEntry, raw: inout [[UInt8]]) {
            channelURL = entry.channel.url
            kind = entry.channel.kind.rawValue
            name = entry.channel.name
            coverURL = entry.channel.coverURL
            customType = entry.channel.customType
            unreadCount = entry.unreadCount
            lastActivityAt = RFC3339.string(from: entry.lastActivityAt)
            lastNotification = entry.lastNotification.map { NotificationItem($0, raw: &raw) }
        }

        enum CodingKeys: String, CodingKey {
            case channelURL = "channel_url"
            case kind, name
            case coverURL = "cover_url"
            case customType = "custom_type"
            case unreadCount = "unread_count"
            case lastActivityAt = "last_activity_at"
            case lastNotification = "last_notification"
        }
    }

    var chat: [Entry] = []
    var feed: [Entry] = []
    var raw: [[UInt8]] = []

    enum CodingKeys: String, CodingKey {
        case chat, feed
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        try RawJSON.response(self, texts: raw)
    }
}
