import Foundation

/// The body of a silent refresh push: `{"aps":{"content-available":1},"herald":{"type":"refresh",
/// "channels":[{"channel_url":…,"unread_count":…}],"badge":N}}` — no alert, sound or badge in `aps`,
/// so iOS wakes the app in the background without showing anything.
public enum RefreshPayload {
    /// APNs's limit for the whole payload.
    public static let maximumBytes = 4096

    /// The payload for these channels (with unread counts) and badge. Channels that would push the
    /// payload past 4 KB are left out (the app refreshes its live collections either way) and
    /// `"truncated":true` says so.
    public static func make(channels: [(url: String, unread: Int64)], badge: Int64) -> [UInt8] {
        var included = channels
        while true {
            let payload = encode(channels: included, badge: badge, truncated: included.count < channels.count)
            if payload.count <= maximumBytes || included.isEmpty { return payload }
            included.removeLast(max(1, included.count / 4))
        }
    }

    private static func encode(channels: [(url: String, unread: Int64)], badge: Int64, truncated: Bool) -> [UInt8] {
        var herald: [String: Any] = [
            "type": "refresh",
            "channels": channels.map { ["channel_url": $0.url, "unread_count": $0.unread] as [String: Any] },
            "badge": badge,
        ]
        if truncated { herald["truncated"] = true }
        let object: [String: Any] = ["aps": ["content-available": 1], "herald": herald]
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }
}
