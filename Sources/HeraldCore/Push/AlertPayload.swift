import Foundation

/// The body of a visible alert push: `aps` (alert, sound, badge, `mutable-content` so a Notification
/// Service Extension can report delivery, and the notification's extra `aps` fields), the `herald`
/// object in the format of Sendbird's `sendbird` push payload object (so apps moving from it keep
/// their extension code), and the
/// notification's custom keys.
public enum AlertPayload {
    /// Everything the payload says, resolved by the dispatcher for one recipient.
    public struct Content: Sendable, Equatable {
        public struct Person: Sendable, Equatable {
            public var id: String
            public var name: String
            public var profileURL: String

            public init(id: String, name: String, profileURL: String = "") {
                self.id = id
                self.name = name
                self.profileURL = profileURL
            }
        }

        public var notificationID: Int64
        public var createdAtMilliseconds: Int64
        public var appID: String
        /// The alert title (the template's push title); `nil` for none.
        public var title: String?
        /// The alert text before the nickname prefix (custom text, the template's push body, or the
        /// generic no-detail text).
        public var text: String
        /// Prefix the text with the sender's nickname (`{nickname}: {text}`).
        public var includeNickname: Bool
        /// The `herald.type`: `MESG` from a user, `ADMM` from the service.
        public var type: String
        public var customType: String
        public var channelURL: String
        public var channelName: String
        public var channelCustomType: String
        public var channelType: String
        public var channelUnreadCount: Int64
        public var unreadMessageCount: Int64
        /// `aps.badge`; `nil` leaves the badge alone.
        public var badge: Int64?
        public var sound: String
        public var sender: Person?
        public var recipient: Person
        public var mentionedUsers: [Person]
        public var audienceType: String
        public var extraAPS: [String: JSONValue]
        public var custom: [String: JSONValue]
        /// The notification's media (its data's `media_url`, when an `http(s)` URL), listed in `files`
        /// for a Notification Service Extension to attach.
        public var mediaURL: String? = nil

        /// `mediaURL` when it is an `http(s)` URL, as `files` lists it.
        var attachableMedia: [String] {
            guard let mediaURL, let scheme = mediaURL.split(separator: ":").first?.lowercased(), scheme == "https" || scheme == "http" else {
                return []
            }
            return [mediaURL]
        }

        public init(
            notificationID: Int64,
            createdAtMilliseconds: Int64,
            appID: String,
            title: String?,
            text: String,
            includeNickname: Bool,
            type: String,
            customType: String,
            channelURL: String,
            channelName: String,
            channelCustomType: String,
            channelType: String,
            channelUnreadCount: Int64,
            unreadMessageCount: Int64,
            badge: Int64?,
            sound: String,
            sender: Person?,
            recipient: Person,
            mentionedUsers: [Person],
            audienceType: String,
            extraAPS: [String: JSONValue],
            custom: [String: JSONValue]
        ) {
            self.notificationID = notificationID
            self.createdAtMilliseconds = createdAtMilliseconds
            self.appID = appID
            self.title = title
            self.text = text
            self.includeNickname = includeNickname
            self.type = type
            self.customType = customType
            self.channelURL = channelURL
            self.channelName = channelName
            self.channelCustomType = channelCustomType
            self.channelType = channelType
            self.channelUnreadCount = channelUnreadCount
            self.unreadMessageCount = unreadMessageCount
            self.badge = badge
            self.sound = sound
            self.sender = sender
            self.recipient = recipient
            self.mentionedUsers = mentionedUsers
            self.audienceType = audienceType
            self.extraAPS = extraAPS
            self.custom = custom
        }
    }

    /// The APNs payload, at most `RefreshPayload.maximumBytes`: when it would be larger, the message
    /// text is cut (at a character boundary, so neither UTF-8 nor the JSON breaks) and ends with "…".
    public static func make(_ content: Content) -> [UInt8] {
        fitted(content, maximumBytes: RefreshPayload.maximumBytes, size: \.count) { encode(content, text: $0) }
    }

    /// A browser's payload (Web Push), at most `maximumBytes`: `{"notification":{"title","body"},
    /// "herald":{…}}` and the custom keys, for the service worker to show (`showNotification(title,
    /// {body})`; a browser has no sounds, and its `badge` option is an image: the unread count is the
    /// `herald` object's).
    public static func makeWeb(_ content: Content, maximumBytes: Int) -> [UInt8] {
        fitted(content, maximumBytes: maximumBytes, size: \.count) { text in
            var notification: [String: JSONValue] = ["body": .string(body(content, text: text))]
            if let title = content.title { notification["title"] = .string(title) }
            var payload = content.custom
            payload["notification"] = .object(notification)
            payload["herald"] = .object(herald(content, text: text))
            return serialize(payload)
        }
    }

    /// What an FCM notification message carries: the title and body shown, and the data the app reads
    /// (`herald`, the same object as APNs' as JSON text, and the custom keys, strings as they are and
    /// other values as JSON); `render` turns them into the message, whose `size` is kept within
    /// `maximumBytes` by cutting the text.
    public static func makeFCM<Message>(
        _ content: Content,
        maximumBytes: Int,
        size: (Message) -> Int,
        render: (_ title: String?, _ body: String, _ data: [(key: String, value: String)]) -> Message
    ) -> Message {
        fitted(content, maximumBytes: maximumBytes, size: size) { text in
            var data: [(key: String, value: String)] = [("herald", String(decoding: serialize(herald(content, text: text)), as: UTF8.self))]
            for (key, value) in content.custom.sorted(by: { $0.key < $1.key }) where !isReservedByFCM(key) && key != "herald" {
                if case .string(let text) = value {
                    data.append((key, text))
                } else {
                    data.append((key, String(decoding: serialize(value), as: UTF8.self)))
                }
            }
            return render(content.title, body(content, text: text), data)
        }
    }

    /// Data keys FCM refuses in a message (its own).
    static func isReservedByFCM(_ key: String) -> Bool {
        ["from", "message_type", "collapse_key", "notification"].contains(key) || key.hasPrefix("google") || key.hasPrefix("gcm")
    }

    /// The rendering of `content` with the longest prefix of its text that fits `maximumBytes` (each
    /// try renders the whole payload, so escaping and the text's several appearances count exactly).
    static func fitted<Rendered>(_ content: Content, maximumBytes: Int, size: (Rendered) -> Int, render: (_ text: String) -> Rendered) -> Rendered {
        let full = render(content.text)
        if size(full) <= maximumBytes { return full }
        let characters = Array(content.text)
        var (low, high) = (0, characters.count)
        var best = render("…")
        while low < high {
            let middle = (low + high + 1) / 2
            let attempt = render(String(characters[..<middle]) + "…")
            if size(attempt) <= maximumBytes {
                best = attempt
                low = middle
            } else {
                high = middle - 1
            }
        }
        return best
    }

    /// The text shown: prefixed with the sender's nickname when asked.
    private static func body(_ content: Content, text: String) -> String {
        content.includeNickname && !(content.sender?.name ?? "").isEmpty ? "\(content.sender!.name): \(text)" : text
    }

    private static func serialize(_ value: JSONValue) -> [UInt8] {
        Array((try? CanonicalJSON.encoder.encode(value)) ?? Data("{}".utf8))
    }

    private static func serialize(_ object: [String: JSONValue]) -> [UInt8] {
        serialize(.object(object))
    }

    private static func encode(_ content: Content, text: String) -> [UInt8] {
        var alert: [String: JSONValue] = ["body": .string(body(content, text: text))]
        if let title = content.title { alert["title"] = .string(title) }
        var aps = content.extraAPS
        aps["alert"] = .object(alert)
        aps["sound"] = .string(content.sound)
        aps["mutable-content"] = .number(1)
        if let badge = content.badge { aps["badge"] = .number(Double(badge)) }
        var payload = content.custom
        payload["aps"] = .object(aps)
        payload["herald"] = .object(herald(content, text: text))
        return serialize(payload)
    }

    /// The `herald` object, in the format of Sendbird's `sendbird` object.
    private static func herald(_ content: Content, text: String) -> [String: JSONValue] {
        let body = body(content, text: text)
        func person(_ person: Content.Person?, extended: Bool) -> JSONValue {
            var object: [String: JSONValue] = ["id": .string(person?.id ?? ""), "name": .string(person?.name ?? "")]
            if extended {
                object["profile_url"] = .string(person?.profileURL ?? "")
                object["require_auth_for_profile_image"] = .bool(false)
                object["metadata"] = .object([:])
            }
            return .object(object)
        }
        return [
            "category": .string("messaging:offline_notification"),
            "type": .string(content.type),
            "message": .string(text),
            "custom_type": .string(content.customType),
            "message_id": .number(Double(content.notificationID)),
            "created_at": .number(Double(content.createdAtMilliseconds)),
            "app_id": .string(content.appID),
            "unread_message_count": .number(Double(content.unreadMessageCount)),
            "channel": .object([
                "channel_url": .string(content.channelURL),
                "name": .string(content.channelName),
                "custom_type": .string(content.channelCustomType),
                "channel_unread_count": .number(Double(content.channelUnreadCount)),
            ]),
            "channel_type": .string(content.channelType),
            "sender": person(content.sender, extended: true),
            "recipient": person(content.recipient, extended: false),
            "files": .array(content.attachableMedia.map { .object(["url": .string($0)]) }),
            "translations": .object([:]),
            "push_title": .string(content.title ?? ""),
            "push_alert": .string(body),
            "push_sound": .string(content.sound),
            "audience_type": .string(content.audienceType),
            "mentioned_users": .array(
                content.mentionedUsers.map { user in
                    .object([
                        "user_id": .string(user.id), "nickname": .string(user.name), "profile_url": .string(user.profileURL),
                        "require_auth_for_profile_image": .bool(false),
                    ])
                }
            ),
        ]
    }
}
