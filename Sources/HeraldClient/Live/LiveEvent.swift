import Foundation

/// A message of the live stream (`GET /v1/me/stream`), as `openapi.yaml` describes them.
enum LiveEvent: Sendable {
    /// The stream is open; every change committed before lies below `position` (older servers send
    /// none), every later one comes as an event.
    case ready(position: Int64?)
    case upserted(channelURL: String, notification: HeraldNotification, unreadCount: Int)
    case deleted(channelURL: String, id: String, position: Int64, unreadCount: Int)
    case channelRead(channelURL: String, state: ChannelState, position: Int64)
    case delivered(channelURL: String, ids: [String], position: Int64)
    case channelUpdated(ChannelInfo)
    case channelDeleted(channelURL: String)
    case badge(Int)
    /// Events may have been missed: every live collection syncs.
    case resync
    /// A type this version does not know (a newer server): ignored.
    case unknown(String)

    /// Parses one text message; `nil` when it is not an event at all.
    init?(text: String) {
        guard let data = text.data(using: .utf8), let message = try? Self.decoder.decode(Message.self, from: data) else { return nil }
        switch message.type {
        case "ready":
            self = .ready(position: message.position.flatMap { Int64($0) })
        case "notification.created", "notification.updated":
            guard let channelURL = message.channelUrl, let wire = message.notification, let notification = try? HeraldNotification(converting: wire)
            else {
                return nil
            }
            var version = notification
            // The event's position is the change's; the object's is the same change.
            version.position = message.position.flatMap { Int64($0) } ?? notification.position
            self = .upserted(channelURL: channelURL, notification: version, unreadCount: message.unreadCount ?? 0)
        case "notification.deleted":
            guard let channelURL = message.channelUrl, let id = message.notificationId else { return nil }
            self = .deleted(
                channelURL: channelURL,
                id: id,
                position: message.position.flatMap { Int64($0) } ?? 0,
                unreadCount: message.unreadCount ?? 0
            )
        case "channel.read":
            guard let channelURL = message.channelUrl else { return nil }
            self = .channelRead(
                channelURL: channelURL,
                state: ChannelState(unreadCount: message.unreadCount ?? 0, lastReadAt: message.lastReadAt, lastSeenAt: message.lastSeenAt),
                position: message.position.flatMap { Int64($0) } ?? 0
            )
        case "delivery.updated":
            guard let channelURL = message.channelUrl else { return nil }
            self = .delivered(channelURL: channelURL, ids: message.notificationIds ?? [], position: message.position.flatMap { Int64($0) } ?? 0)
        case "channel.updated":
            guard let channelURL = message.channelUrl else { return nil }
            self = .channelUpdated(
                ChannelInfo(
                    url: channelURL,
                    kind: message.kind == "chat" ? .chat : .feed,
                    name: message.name ?? "",
                    coverURL: message.coverUrl ?? "",
                    customType: message.customType ?? ""
                )
            )
        case "channel.deleted":
            guard let channelURL = message.channelUrl else { return nil }
            self = .channelDeleted(channelURL: channelURL)
        case "badge":
            self = .badge(message.badge ?? 0)
        case "resync":
            self = .resync
        default:
            self = .unknown(message.type)
        }
    }

    /// Every field any event has; each event uses some.
    private struct Message: Decodable {
        var type: String
        var channelUrl: String?
        var position: String?
        var notification: Components.Schemas.CollectionNotification?
        var notificationId: String?
        var notificationIds: [String]?
        var unreadCount: Int?
        var lastReadAt: Date?
        var lastSeenAt: Date?
        var kind: String?
        var name: String?
        var coverUrl: String?
        var customType: String?
        var badge: Int?

        enum CodingKeys: String, CodingKey {
            case type, position, notification, kind, name, badge
            case channelUrl = "channel_url"
            case notificationId = "notification_id"
            case notificationIds = "notification_ids"
            case unreadCount = "unread_count"
            case lastReadAt = "last_read_at"
            case lastSeenAt = "last_seen_at"
            case coverUrl = "cover_url"
            case customType = "custom_type"
        }
    }

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            guard let date = try? MillisecondDateTranscoder().decode(try container.decode(String.self)) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 time with milliseconds")
            }
            return date
        }
        return decoder
    }()
}
