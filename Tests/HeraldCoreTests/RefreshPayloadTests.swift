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
}
