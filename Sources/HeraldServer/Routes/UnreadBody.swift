import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

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
    /// Every change below this position is counted.
    var horizon: String
}
