import HeraldCore
import HeraldStore

/// The JSON text of the events a live stream carries (documented in `openapi.yaml` under the stream).
///
/// Every event about a channel names the channel's URL and the change's `position` in the user's
/// change stream (a decimal string; positions of one notification only grow). A client applies an
/// event to the collection it holds — an object with a newer position replaces the one it has — and
/// keeps syncing with its token as usual; events are a fast path, the sync stays the truth. After a
/// `resync` event (events may have been missed) it syncs at once.
enum LiveEvent {
    /// The first event: the stream is registered and its device counts as online everywhere. Every
    /// change committed before lies below `position`; every later one comes as an event. A client
    /// syncs until its answers' horizon passes `position` (an answer is held back below a
    /// transaction still open anywhere in the database cluster), and is then complete.
    static func ready(connectionID: Int64, deviceID: Int64?, position: Int64) -> String {
        write { writer in
            writer.key("type")
            writer.string("ready")
            writer.key("connection_id")
            writer.string(String(connectionID))
            writer.key("device_id")
            writer.string(deviceID.map { String($0) })
            writer.key("position")
            writer.string(String(position))
        }
    }

    /// `notification.created`, `.updated` or `.deleted`, with the copy as a sync would return it.
    static func notification(_ change: LiveHint.NotificationChange, channelURL: String, copy: LiveCopy, unreadCount: Int64) -> String {
        write { writer in
            writer.key("type")
            switch copy.change {
            case .deleted: writer.string("notification.deleted")
            case .upserted: writer.string(change == .created ? "notification.created" : "notification.updated")
            }
            channel(&writer, url: channelURL, position: copy.position)
            switch copy.change {
            case .upserted(let item):
                writer.key("notification")
                NotificationItem(item).write(to: &writer)
            case .deleted(let id):
                writer.key("notification_id")
                writer.string(String(id))
            }
            writer.key("unread_count")
            writer.integer(unreadCount)
        }
    }

    /// `channel.read`: last read, last seen or the unread count changed (another device, a reset).
    static func channelRead(channelURL: String, position: Int64, state: ChannelState) -> String {
        write { writer in
            writer.key("type")
            writer.string("channel.read")
            channel(&writer, url: channelURL, position: position)
            StateBody(state).writeFields(to: &writer)
        }
    }

    /// `delivery.updated`: these notifications are now `DELIVERED` for the user.
    static func deliveryUpdated(channelURL: String, position: Int64, ids: [Int64]) -> String {
        write { writer in
            writer.key("type")
            writer.string("delivery.updated")
            channel(&writer, url: channelURL, position: position)
            writer.key("notification_ids")
            writer.strings(ids.map { String($0) })
            writer.key("status")
            writer.string(CollectionItem.Status.delivered.name)
        }
    }

    /// `channel.updated`: the channel's definition changed; its entry in the channel list with it.
    static func channelUpdated(_ channel: CollectionChannel) -> String {
        write { writer in
            writer.key("type")
            writer.string("channel.updated")
            channel.writeFields(to: &writer)
        }
    }

    /// `channel.deleted`: the channel is gone, with every notification in it.
    static func channelDeleted(url: String) -> String {
        write { writer in
            writer.key("type")
            writer.string("channel.deleted")
            writer.key("channel_url")
            writer.string(url)
        }
    }

    /// `badge`: the user's total unread count.
    static func badge(_ total: Int64) -> String {
        write { writer in
            writer.key("type")
            writer.string("badge")
            writer.key("badge")
            writer.integer(total)
        }
    }

    /// `resync`: events may have been missed (the hub lost its database listener for a while).
    static let resync = write { writer in
        writer.key("type")
        writer.string("resync")
    }

    private static func channel(_ writer: inout JSONWriter, url: String, position: Int64) {
        writer.key("channel_url")
        writer.string(url)
        writer.key("position")
        writer.string(String(position))
    }

    private static func write(_ body: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        body(&writer)
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
