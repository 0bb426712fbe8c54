import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import Postgres

/// `GET /v1/me/channels`: the user's channels (chat channels newest activity first, feed channels by
/// URL), or the list's change log. The empty body answers a token that cannot continue
/// (`is_live: false`).
struct ChannelListBody: JSONWritable {
    var chat: [ChannelListEntry] = []
    var feed: [ChannelListEntry] = []
    var deleted: [String] = []
    var nextToken: String?
    var isLive = false

    init() {}

    init(_ list: ChannelList, nextToken: String) {
        for entry in list.entries {
            if entry.channel.kind == .chat { chat.append(entry) } else { feed.append(entry) }
        }
        deleted = list.removed
        self.nextToken = nextToken
        isLive = true
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("is_live")
        writer.bool(isLive)
        writer.key("chat")
        Self.write(chat, to: &writer)
        writer.key("feed")
        Self.write(feed, to: &writer)
        writer.key("deleted")
        writer.strings(deleted)
        writer.key("next_token")
        writer.string(nextToken)
        writer.endObject()
    }

    private static func write(_ entries: [ChannelListEntry], to writer: inout JSONWriter) {
        writer.beginArray()
        for entry in entries {
            writer.beginObject()
            entry.channel.writeFields(to: &writer)
            writer.key("unread_count")
            writer.integer(entry.unreadCount)
            writer.key("last_activity_at")
            writer.string(RFC3339.string(from: entry.lastActivityAt))
            // Encodable left a nil last notification out rather than writing null; so does this.
            if let last = entry.lastNotification {
                writer.key("last_notification")
                NotificationItem(last).write(to: &writer)
            }
            writer.endObject()
        }
        writer.endArray()
    }
}
