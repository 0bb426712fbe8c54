import Foundation

/// The body of a silent refresh push: `{"aps":{"content-available":1},"herald":{"type":"refresh",
/// "notification_id":"…","channels":[{"channel_url":…,"unread_count":…}],"badge":N}}` — no alert, sound
/// or badge in `aps`, so iOS wakes the app in the background without showing anything.
/// `notification_id` names the notification that caused the refresh; the app may pass the `herald`
/// object to `POST /v1/me/delivered` as the receipt.
///
/// FCM and Web Push carry the same `herald` object: FCM as the data value `herald` (JSON text), Web
/// Push as `{"herald":{…}}`.
public enum RefreshPayload {
    /// The shapes the `herald` object travels in.
    public enum Format: Sendable {
        /// `{"aps":{"content-available":1},"herald":{…}}`.
        case apns
        /// `{"herald":{…}}`: a browser's push.
        case web
        /// The `herald` object alone: FCM's data value.
        case heraldObject
    }

    /// APNs's limit for the whole payload.
    public static let maximumBytes = 4096

    /// The payload for these channels (with unread counts) and badge. Channels that would push the
    /// payload past 4 KB are left out (the app refreshes its live collections either way) and
    /// `"truncated":true` says so.
    public static func make(
        channels: [(url: String, unread: Int64)],
        badge: Int64,
        notificationID: Int64? = nil,
        format: Format = .apns,
        maximumBytes: Int = maximumBytes
    ) -> [UInt8] {
        var included = channels
        while true {
            let payload = encode(
                channels: included,
                badge: badge,
                notificationID: notificationID,
                truncated: included.count < channels.count,
                format: format
            )
            if payload.count <= maximumBytes || included.isEmpty { return payload }
            included.removeLast(max(1, included.count / 4))
        }
    }

    /// Written by hand, in the order the API documents: `JSONSerialization` was a seventh of the
    /// dispatcher's CPU. Channel URLs need no escaping (`Channel.urlProblem` allows `A–Z a–z 0–9 . _ ~ -`
    /// only); anything else is escaped as JSON requires.
    private static func encode(
        channels: [(url: String, unread: Int64)],
        badge: Int64,
        notificationID: Int64?,
        truncated: Bool,
        format: Format
    ) -> [UInt8] {
        var text: String
        switch format {
        case .apns: text = #"{"aps":{"content-available":1},"herald":"#
        case .web: text = #"{"herald":"#
        case .heraldObject: text = ""
        }
        text += #"{"type":"refresh","#
        if let notificationID { text += #""notification_id":"\#(notificationID)","# }
        text += #""channels":["#
        for (index, channel) in channels.enumerated() {
            if index > 0 { text += "," }
            text += #"{"channel_url":"#
            text += JSONString.quoted(channel.url)
            text += #","unread_count":\#(channel.unread)}"#
        }
        text += #"],"badge":\#(badge)"#
        if truncated { text += #","truncated":true"# }
        text += format == .heraldObject ? "}" : "}}"
        return Array(text.utf8)
    }
}
