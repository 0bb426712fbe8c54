public import Foundation

/// A push Herald sent, read from the `userInfo` the system hands the app.
public enum HeraldPush: Sendable, Equatable {
    /// A silent refresh push (`content-available`): what changed, for whom, and the badge.
    case refresh(RefreshPush)
    /// A visible alert (a chat message, say).
    case alert(AlertPush)

    /// The push `userInfo` stands for; `nil` when it is not Herald's (or not one this version reads).
    public init?(userInfo: [AnyHashable: Any]) {
        guard let herald = userInfo["herald"] as? [String: Any], JSONSerialization.isValidJSONObject(herald),
            let data = try? JSONSerialization.data(withJSONObject: herald)
        else { return nil }
        let decoder = JSONDecoder()
        if herald["type"] as? String == "refresh" {
            guard let refresh = try? decoder.decode(RefreshPush.self, from: data) else { return nil }
            self = .refresh(refresh)
        } else {
            guard var alert = try? decoder.decode(AlertPush.self, from: data) else { return nil }
            alert.badge = (userInfo["aps"] as? [String: Any])?["badge"] as? Int
            self = .alert(alert)
        }
    }

    /// The channel the push is about, if it names one.
    public var channelURL: String? {
        switch self {
        case .refresh(let refresh): return refresh.channels.count == 1 ? refresh.channels[0].channelURL : nil
        case .alert(let alert): return alert.channelURL
        }
    }
}

/// A silent refresh push: `{"aps":{"content-available":1},"herald":{"type":"refresh",…}}`.
public struct RefreshPush: Sendable, Equatable, Decodable {
    /// One of the user's channels, and their unread count in it.
    public struct Channel: Sendable, Equatable, Decodable {
        public var channelURL: String
        public var unreadCount: Int

        public init(channelURL: String, unreadCount: Int) {
            self.channelURL = channelURL
            self.unreadCount = unreadCount
        }

        enum CodingKeys: String, CodingKey {
            case channelURL = "channel_url"
            case unreadCount = "unread_count"
        }
    }

    /// The notification whose change caused the push, when one did.
    public var notificationID: String?
    /// The user's channels with their unread counts as the push was made (all of them, unless
    /// `truncated`): a change is in one of these.
    public var channels: [Channel]
    /// The user's unread total: the app icon's badge.
    public var badge: Int
    /// The user has more channels than fit in a push: refresh everything.
    public var truncated: Bool

    enum CodingKeys: String, CodingKey {
        case notificationID = "notification_id"
        case channels, badge, truncated
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        notificationID = try container.decodeIfPresent(String.self, forKey: .notificationID)
        channels = try container.decodeIfPresent([Channel].self, forKey: .channels) ?? []
        badge = try container.decodeIfPresent(Int.self, forKey: .badge) ?? 0
        truncated = try container.decodeIfPresent(Bool.self, forKey: .truncated) ?? false
    }
}

/// A visible alert push's `herald` object (Sendbird's format).
public struct AlertPush: Sendable, Equatable, Decodable {
    /// The notification the alert shows.
    public var notificationID: String
    /// Its channel.
    public var channelURL: String
    /// `feed` or `chat`.
    public var channelType: String
    /// The notification's category.
    public var category: String
    /// The alert's text as sent (before the sender's nickname).
    public var message: String
    /// When the notification was sent.
    public var createdAt: Date
    /// The user's unread count in the channel when the push was made.
    public var channelUnreadCount: Int
    /// The media to attach (`files[].url`: the notification's `media_url`), in order.
    public var mediaURLs: [URL]
    /// `aps.badge`, when the push sets one.
    public var badge: Int?

    struct Channel: Decodable {
        var channelURL: String
        var channelUnreadCount: Int?

        enum CodingKeys: String, CodingKey {
            case channelURL = "channel_url"
            case channelUnreadCount = "channel_unread_count"
        }
    }

    struct File: Decodable {
        var url: String
    }

    enum CodingKeys: String, CodingKey {
        case notificationID = "message_id"
        case channel
        case channelType = "channel_type"
        case category = "custom_type"
        case message
        case createdAt = "created_at"
        case files
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // `message_id` is a JSON number in Sendbird's format; ids are decimal strings everywhere else.
        if let number = try? container.decode(Int64.self, forKey: .notificationID) {
            notificationID = String(number)
        } else {
            notificationID = try container.decode(String.self, forKey: .notificationID)
        }
        let channel = try container.decode(Channel.self, forKey: .channel)
        channelURL = channel.channelURL
        channelUnreadCount = channel.channelUnreadCount ?? 0
        channelType = try container.decodeIfPresent(String.self, forKey: .channelType) ?? ""
        category = try container.decodeIfPresent(String.self, forKey: .category) ?? ""
        message = try container.decodeIfPresent(String.self, forKey: .message) ?? ""
        createdAt = Date(milliseconds: try container.decodeIfPresent(Int.self, forKey: .createdAt) ?? 0)
        mediaURLs = (try container.decodeIfPresent([File].self, forKey: .files) ?? []).compactMap { file in
            URL(string: file.url).flatMap { ["https", "http"].contains($0.scheme?.lowercased()) ? $0 : nil }
        }
        badge = nil
    }
}

/// Where a tapped notification leads: the app opens this channel at this notification.
public struct NotificationRoute: Sendable, Equatable, Hashable {
    public var channelURL: String
    public var notificationID: String

    public init(channelURL: String, notificationID: String) {
        self.channelURL = channelURL
        self.notificationID = notificationID
    }
}
