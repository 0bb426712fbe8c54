import Foundation
import HeraldCore
import Testing

@Suite struct RefreshPayloadTests {
    @Test func theSilentPayloadNamesChannelsAndBadgeOnly() throws {
        let payload = RefreshPayload.make(channels: [("news", 2), ("odd\"url\\", 0)], badge: 2)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        #expect(object["aps"] as? [String: Int] == ["content-available": 1])
        let herald = try #require(object["herald"] as? [String: Any])
        #expect(herald["type"] as? String == "refresh")
        #expect(herald["badge"] as? Int == 2)
        let channels = try #require(herald["channels"] as? [[String: Any]])
        #expect(channels.map { $0["channel_url"] as? String } == ["news", "odd\"url\\"])
        #expect(channels.map { $0["unread_count"] as? Int } == [2, 0])
        #expect(herald["truncated"] == nil)
    }

    @Test func theCausingNotificationIsNamedForDeliveryReceipts() throws {
        let payload = RefreshPayload.make(channels: [("news", 1)], badge: 1, notificationID: 42)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        let herald = try #require(object["herald"] as? [String: Any])
        #expect(herald["notification_id"] as? String == "42")
        #expect(herald["type"] as? String == "refresh")
        let without = try #require(try JSONSerialization.jsonObject(with: Data(RefreshPayload.make(channels: [], badge: 0))) as? [String: Any])
        #expect((without["herald"] as? [String: Any])?["notification_id"] == nil)
    }

    @Test func tooManyChannelsAreCutToFitFourKilobytes() throws {
        let channels = (0..<500).map { (url: "channel-with-a-long-url-\($0)", unread: Int64($0)) }
        let payload = RefreshPayload.make(channels: channels, badge: 124_750)
        #expect(payload.count <= 4096)
        let herald = try #require((try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])?["herald"] as? [String: Any])
        #expect(herald["truncated"] as? Bool == true)
        #expect(herald["badge"] as? Int == 124_750)
        #expect((herald["channels"] as? [Any])?.isEmpty == false)
    }

    /// Browsers get `{"herald":{…}}` and FCM the `herald` object alone, the same object APNs carries.
    @Test func theHeraldObjectTravelsAloneOrWrappedForEachService() throws {
        let channels: [(url: String, unread: Int64)] = [("news", 2)]
        let apns = try #require(try JSONSerialization.jsonObject(with: Data(RefreshPayload.make(channels: channels, badge: 2))) as? [String: Any])
        let web = try #require(
            try JSONSerialization.jsonObject(with: Data(RefreshPayload.make(channels: channels, badge: 2, format: .web))) as? [String: Any]
        )
        let alone = try #require(
            try JSONSerialization.jsonObject(with: Data(RefreshPayload.make(channels: channels, badge: 2, format: .heraldObject))) as? [String: Any]
        )
        #expect(web.keys.sorted() == ["herald"])
        let herald = try #require(apns["herald"] as? NSDictionary)
        #expect(herald == web["herald"] as? NSDictionary)
        #expect(herald == alone as NSDictionary)
        // Each format is cut to its own limit.
        let many = (0..<500).map { (url: "channel-with-a-long-url-\($0)", unread: Int64($0)) }
        #expect(RefreshPayload.make(channels: many, badge: 1, format: .web, maximumBytes: 3_993).count <= 3_993)
    }
}
