import HeraldCore
import HeraldStore

extension CollectionChannel {
    /// The channel's definition as the API shows it wherever a channel appears for a user (a
    /// collection's `channel`, a channel list entry, the live `channel.updated` event): fields only,
    /// inside an object the caller has begun.
    func writeFields(to writer: inout JSONWriter) {
        writer.key("channel_url")
        writer.string(url)
        writer.key("kind")
        writer.string(kind.rawValue)
        writer.key("name")
        writer.string(name)
        writer.key("cover_url")
        writer.string(coverURL)
        writer.key("custom_type")
        writer.string(customType)
    }
}
