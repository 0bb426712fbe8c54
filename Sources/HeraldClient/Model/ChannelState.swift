public import Foundation

/// The user's state in one channel.
public struct ChannelState: Sendable, Hashable, Codable {
    public var unreadCount: Int
    public var lastReadAt: Date?
    /// Notifications created after it are new (the feed's "new" badge).
    public var lastSeenAt: Date?

    public init(unreadCount: Int = 0, lastReadAt: Date? = nil, lastSeenAt: Date? = nil) {
        self.unreadCount = unreadCount
        self.lastReadAt = lastReadAt?.onMillisecondGrid
        self.lastSeenAt = lastSeenAt?.onMillisecondGrid
    }

    init(_ wire: Components.Schemas.ChannelState) {
        self.init(unreadCount: wire.unreadCount, lastReadAt: wire.lastReadAt, lastSeenAt: wire.lastSeenAt)
    }
}

/// A channel's definition as the user's app shows it.
public struct ChannelInfo: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case feed
        case chat
    }

    public var url: String
    public var kind: Kind
    public var name: String
    public var coverURL: String
    public var customType: String

    public init(url: String, kind: Kind, name: String, coverURL: String = "", customType: String = "") {
        self.url = url
        self.kind = kind
        self.name = name
        self.coverURL = coverURL
        self.customType = customType
    }
}
