import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import Postgres

/// A notification in a user's collection.
struct NotificationItem {
    var item: CollectionItem

    init(_ item: CollectionItem) {
        self.item = item
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("id")
        writer.string(String(item.id))
        writer.key("template_key")
        writer.string(item.templateKey)
        writer.key("template_version")
        writer.integer(item.templateVersion)
        writer.key("data")
        writer.raw(item.data.utf8)
        writer.key("category")
        writer.string(item.category)
        writer.key("tags")
        writer.strings(item.tags)
        writer.key("event_deadline")
        writer.string(item.eventDeadline.map(RFC3339.string))
        writer.key("status")
        writer.string(item.status.name)
        writer.key("archived")
        writer.bool(item.archived)
        writer.key("actions")
        writer.raw(item.actions.utf8)
        writer.key("actions_done")
        writer.strings(item.actionsDone)
        writer.key("created_at")
        writer.string(RFC3339.string(from: item.createdAt))
        writer.key("created_at_ms")
        writer.integer(RFC3339.milliseconds(from: item.createdAt))
        writer.key("updated_at")
        writer.string(RFC3339.string(from: item.updatedAt))
        writer.key("updated_at_ms")
        writer.integer(RFC3339.milliseconds(from: item.updatedAt))
        writer.key("position")
        writer.string(String(item.position))
        writer.endObject()
    }
}

/// The user's state in a channel.
struct StateBody: JSONWritable {
    var state: ChannelState
    /// The answer of a mark: the mark's position (see `CollectionStore.stateQuery`).
    var position: Int64?

    init(_ state: ChannelState, position: Int64? = nil) {
        self.state = state
        self.position = position
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writeFields(to: &writer)
        if let position {
            writer.key("position")
            writer.string(String(position))
        }
        writer.endObject()
    }

    /// The state's fields, for objects that carry them beside others (the `channel.read` event).
    func writeFields(to writer: inout JSONWriter) {
        writer.key("unread_count")
        writer.integer(state.unreadCount)
        // Present as null, not absent: clients read "never" explicitly.
        writer.key("last_read_at")
        writer.string(state.lastReadAt.map(RFC3339.string))
        writer.key("last_seen_at")
        writer.string(state.lastSeenAt.map(RFC3339.string))
    }
}

/// The answer to a collection request: an initial page or the changes since a token.
struct CollectionBody: JSONWritable {
    var isLive: Bool
    var notifications: [NotificationItem] = []
    var deleted: [String] = []
    var nextToken: String?
    var hasMore = false
    var prevCursor: String?
    var channel: CollectionChannel
    var state: ChannelState
    var badge: Int64
    /// Every change at a position below this one had ended when the answer's snapshot was taken.
    var horizon: Int64

    init(channel: CollectionChannel, snapshot: CollectionStore.Snapshot, isLive: Bool) {
        self.isLive = isLive
        self.channel = channel
        self.state = snapshot.state
        self.badge = snapshot.badge
        self.horizon = snapshot.horizon
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("is_live")
        writer.bool(isLive)
        writer.key("notifications")
        writer.beginArray()
        for notification in notifications { notification.write(to: &writer) }
        writer.endArray()
        writer.key("deleted")
        writer.strings(deleted)
        writer.key("next_token")
        writer.string(nextToken)
        writer.key("has_more")
        writer.bool(hasMore)
        writer.key("prev_cursor")
        writer.string(prevCursor)
        writer.key("channel")
        writer.beginObject()
        channel.writeFields(to: &writer)
        writer.key("state")
        StateBody(state).write(to: &writer)
        writer.endObject()
        writer.key("badge")
        writer.integer(badge)
        writer.key("horizon")
        writer.string(String(horizon))
        writer.endObject()
    }
}

/// An older page of a collection.
struct PageBody: JSONWritable {
    var notifications: [NotificationItem] = []
    var prevCursor: String?

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("notifications")
        writer.beginArray()
        for notification in notifications { notification.write(to: &writer) }
        writer.endArray()
        writer.key("prev_cursor")
        writer.string(prevCursor)
        writer.endObject()
    }
}
