import Foundation
import HeraldCore
import Testing

@Suite struct AlertPayloadTests {
    static func content(text: String = "Your order shipped", badge: Int64? = 3) -> AlertPayload.Content {
        AlertPayload.Content(
            notificationID: 42,
            createdAtMilliseconds: 1_795_000_000_123,
            appID: "herald",
            title: "Shipped",
            text: text,
            includeNickname: true,
            type: "MESG",
            customType: "orders",
            channelURL: "chat-1",
            channelName: "Orders",
            channelCustomType: "support",
            channelType: "chat",
            channelUnreadCount: 2,
            unreadMessageCount: 3,
            badge: badge,
            sound: "chime.caf",
            sender: .init(id: "shop", name: "Shop", profileURL: "https://example.com/shop.png"),
            recipient: .init(id: "u1", name: "Ann"),
            mentionedUsers: [.init(id: "u1", name: "Ann")],
            audienceType: "targets",
            extraAPS: ["thread-id": .string("orders"), "interruption-level": .string("time-sensitive")],
            custom: ["deep_link": .string("app://orders/42")]
        )
    }

    static func object(_ payload: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
    }

    @Test func everyFieldOfTheSeedFormatIsThereWithItsType() throws {
        let payload = try Self.object(AlertPayload.make(Self.content()))
        let aps = try #require(payload["aps"] as? [String: Any])
        #expect(aps["alert"] as? [String: String] == ["title": "Shipped", "body": "Shop: Your order shipped"])
        #expect(aps["sound"] as? String == "chime.caf")
        #expect(aps["badge"] as? Int == 3)
        #expect(aps["mutable-content"] as? Int == 1)
        #expect(aps["thread-id"] as? String == "orders")  // the notification's extra aps fields
        #expect(payload["deep_link"] as? String == "app://orders/42")  // and custom keys
        let herald = try #require(payload["herald"] as? [String: Any])
        for key in [
            "category", "type", "message", "custom_type", "app_id", "channel_type", "push_title", "push_alert", "push_sound", "audience_type",
        ] {
            #expect(herald[key] is String, "\(key)")
        }
        for key in ["message_id", "created_at", "unread_message_count"] {
            #expect(herald[key] is Int, "\(key)")
        }
        #expect(herald["message_id"] as? Int == 42)
        #expect(herald["created_at"] as? Int == 1_795_000_000_123)
        #expect(herald["message"] as? String == "Your order shipped")
        #expect(herald["push_alert"] as? String == "Shop: Your order shipped")
        let channel = try #require(herald["channel"] as? [String: Any])
        #expect(channel["channel_url"] as? String == "chat-1" && channel["name"] as? String == "Orders")
        #expect(channel["custom_type"] as? String == "support" && channel["channel_unread_count"] as? Int == 2)
        let sender = try #require(herald["sender"] as? [String: Any])
        #expect(sender["id"] as? String == "shop" && sender["name"] as? String == "Shop" && sender["profile_url"] is String)
        #expect(sender["require_auth_for_profile_image"] as? Bool == false && sender["metadata"] is [String: Any])
        #expect(herald["recipient"] as? [String: String] == ["id": "u1", "name": "Ann"])
        #expect((herald["files"] as? [Any])?.isEmpty == true)
        #expect((herald["translations"] as? [String: Any])?.isEmpty == true)
        let mentioned = try #require(herald["mentioned_users"] as? [[String: Any]])
        #expect(mentioned.first?["user_id"] as? String == "u1" && mentioned.first?["nickname"] as? String == "Ann")
    }

    @Test func withoutANicknameOrABadgeTheyAreLeftOut() throws {
        var content = Self.content(badge: nil)
        content.includeNickname = false
        let aps = try #require(try Self.object(AlertPayload.make(content))["aps"] as? [String: Any])
        #expect((aps["alert"] as? [String: String])?["body"] == "Your order shipped")
        #expect(aps["badge"] == nil)
    }

    @Test func aTenKilobyteMessageIsCutToAValidPayloadOfAtMostFourKilobytes() throws {
        // Multi-byte characters and ones JSON escapes, so neither UTF-8 nor the escaping may break.
        let long = String(repeating: "é\"漢字🙂 ", count: 2_000)
        #expect(long.utf8.count > 10_000)
        let bytes = AlertPayload.make(Self.content(text: long))
        #expect(bytes.count <= 4096)
        #expect(bytes.count > 3_500)  // cut to fit, not to nothing
        #expect(String(validating: bytes, as: UTF8.self) != nil)
        let payload = try Self.object(bytes)
        let message = try #require((payload["herald"] as? [String: Any])?["message"] as? String)
        #expect(message.hasSuffix("…"))
        #expect(long.hasPrefix(String(message.dropLast())))
        #expect(((payload["aps"] as? [String: Any])?["alert"] as? [String: String])?["body"] == "Shop: " + message)
    }

    /// A browser's alert: the notification to show, the same `herald` object, the custom keys; cut
    /// to the size given, as APNs's is.
    @Test func aBrowsersAlertCarriesTheNotificationAndTheSameHeraldObject() throws {
        let payload = try Self.object(AlertPayload.makeWeb(Self.content(), maximumBytes: 3_993))
        #expect(payload["aps"] == nil)
        let notification = try #require(payload["notification"] as? [String: Any])
        #expect(notification["title"] as? String == "Shipped" && notification["body"] as? String == "Shop: Your order shipped")
        #expect(notification.keys.sorted() == ["body", "title"])
        #expect((payload["herald"] as? [String: Any])?["unread_message_count"] as? Int == 3)
        #expect((payload["herald"] as? [String: Any])?["message_id"] as? Int == 42)
        #expect(payload["deep_link"] as? String == "app://orders/42")
        let long = String(repeating: "é\"漢字🙂 ", count: 2_000)
        let cut = AlertPayload.makeWeb(Self.content(text: long), maximumBytes: 3_000)
        #expect(cut.count <= 3_000 && cut.count > 2_500)
        #expect(((try Self.object(cut))["notification"] as? [String: Any])?["body"] as? String != nil)
    }

    /// FCM's alert: the title and body shown, and data values that are all strings — the `herald`
    /// object as JSON text, custom keys as they are (strings) or as JSON — without FCM's reserved keys.
    @Test func anFCMAlertsDataAreStringsWithTheHeraldObjectAsJSON() throws {
        var content = Self.content()
        content.custom = ["deep_link": .string("app://orders/42"), "count": .number(2), "from": .string("x"), "google.x": .string("y")]
        let (title, body, data) = AlertPayload.makeFCM(content, maximumBytes: 4_096, size: { $0.data.reduce(0) { $0 + $1.value.utf8.count } }) {
            (title: $0, body: $1, data: $2)
        }
        #expect(title == "Shipped" && body == "Shop: Your order shipped")
        #expect(data.map(\.key) == ["herald", "count", "deep_link"])
        let herald = try Self.object(Array(try #require(data.first?.value).utf8))
        #expect(herald["message"] as? String == "Your order shipped" && herald["channel_type"] as? String == "chat")
        #expect(data.first { $0.key == "count" }?.value == "2")
        // Cut to fit, like the others.
        let long = String(repeating: "é\"漢字🙂 ", count: 2_000)
        let sized = AlertPayload.makeFCM(Self.content(text: long), maximumBytes: 4_000, size: { $0.count }) { _, body, data in
            Array((body + data.map(\.value).joined()).utf8)
        }
        #expect(sized.count <= 4_000 && sized.count > 3_000)
    }

    @Test func extraAPSFieldsCannotOverrideHeraldsOwn() throws {
        var options = PushOptions()
        for key in ["alert", "badge", "sound", "content-available", "mutable-content"] {
            options.aps = [key: .string("x")]
            #expect(options.problem()?.field == "aps.\(key)")
        }
        options.aps = [:]
        options.custom = ["herald": .string("x")]
        #expect(options.problem()?.field == "custom.herald")

        // And should such keys reach the payload anyway (stored before a rule existed), Herald's win.
        var content = Self.content()
        content.extraAPS = ["sound": .string("evil.caf"), "badge": .number(99), "category": .string("ORDER")]
        content.custom = ["aps": .string("evil"), "herald": .string("evil"), "extra": .bool(true)]
        let payload = try Self.object(AlertPayload.make(content))
        let aps = try #require(payload["aps"] as? [String: Any])
        #expect(aps["sound"] as? String == "chime.caf" && aps["badge"] as? Int == 3 && aps["category"] as? String == "ORDER")
        #expect((payload["herald"] as? [String: Any])?["message_id"] as? Int == 42)
        #expect(payload["extra"] as? Bool == true)
    }
}
