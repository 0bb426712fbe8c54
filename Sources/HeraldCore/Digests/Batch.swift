/// A send's digest settings: within `window` of the first send with `key` that reaches a user, later
/// sends with the same key fold into that user's notification (rendered again with the batch, changed
/// in place) instead of adding one; after the window a new digest starts.
public struct Batch: Sendable, Equatable, Codable {
    /// When the digest's alert push goes.
    public enum Alert: String, Sendable, Codable {
        /// With the notification that opens the digest; later sends change it silently.
        case first
        /// When the window closes, with the digest as it then reads.
        case last
        /// Never: the digest only changes in the collection (and by silent push).
        case none
    }

    /// What sends fold together, per channel and user: `likes:photo-9`.
    public var key: String
    /// As written: `30s`, `10m`, `1h` (see `RetentionPeriod`).
    public var window: String
    public var alert: Alert
    /// How many of the latest sends' variables `{{#batch.items}}` lists.
    public var items: Int

    public init(key: String, window: String, alert: Alert = .first, items: Int = Self.defaultItems) {
        self.key = key
        self.window = window
        self.alert = alert
        self.items = items
    }

    enum CodingKeys: String, CodingKey {
        case key, window, alert, items
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        key = try container.decode(String.self, forKey: .key)
        window = try container.decode(String.self, forKey: .window)
        alert = try container.decodeIfPresent(Alert.self, forKey: .alert) ?? .first
        items = try container.decodeIfPresent(Int.self, forKey: .items) ?? Self.defaultItems
    }

    public static let defaultItems = 10
    public static let maximumItems = 50
    public static let maximumKeyLength = 255
    /// The longest window: a day. A digest open longer reads as a notification that never settles.
    public static let maximumWindowSeconds: Int64 = 86_400

    /// The window in seconds; `nil` when it does not parse or is out of range.
    public var windowSeconds: Int64? {
        RetentionPeriod(window).map(\.seconds).flatMap { $0 <= Self.maximumWindowSeconds ? $0 : nil }
    }

    /// The first rule it breaks, as `(field, message)` under its own name; `nil` when it is valid.
    public func problem() -> (field: String, message: String)? {
        guard (1...Self.maximumKeyLength).contains(key.utf8.count), !key.contains(where: \.isNewline) else {
            return ("key", "must be 1–\(Self.maximumKeyLength) bytes on one line")
        }
        guard windowSeconds != nil else { return ("window", "must be a duration such as \"30s\", \"10m\" or \"1h\", at most 1 day") }
        guard (0...Self.maximumItems).contains(items) else { return ("items", "must be 0–\(Self.maximumItems)") }
        return nil
    }

    /// The window as written back: `60m` is `1h`.
    public var normalized: Batch {
        var copy = self
        if let seconds = windowSeconds, let period = RetentionPeriod(seconds: seconds) { copy.window = period.description }
        return copy
    }
}
