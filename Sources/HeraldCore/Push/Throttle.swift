/// A cap on how often one user hears from a channel (or from one of its categories): at most
/// `limit` notifications per `window`. Beyond it a notification still lands in the collection but
/// alerts nobody (`silence`), or does not land at all (`drop`). Set on a channel, or on a send.
public struct Throttle: Sendable, Equatable, Codable {
    public enum Scope: String, Sendable, Codable {
        /// Counted over the whole channel.
        case channel
        /// Counted per category of the channel.
        case category
    }

    public enum Beyond: String, Sendable, Codable {
        /// The notification lands; no alert push goes out.
        case silence
        /// The user does not get it.
        case drop
    }

    public var limit: Int
    /// As written: `30m`, `1h`, `1d` (see `RetentionPeriod`).
    public var window: String
    public var per: Scope
    public var beyond: Beyond

    public init(limit: Int, window: String, per: Scope = .channel, beyond: Beyond = .silence) {
        self.limit = limit
        self.window = window
        self.per = per
        self.beyond = beyond
    }

    enum CodingKeys: String, CodingKey {
        case limit, window, per, beyond
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        limit = try container.decode(Int.self, forKey: .limit)
        window = try container.decode(String.self, forKey: .window)
        per = try container.decodeIfPresent(Scope.self, forKey: .per) ?? .channel
        beyond = try container.decodeIfPresent(Beyond.self, forKey: .beyond) ?? .silence
    }

    public static let maximumLimit = 10_000
    /// The longest window: a week. What happened before it is forgotten.
    public static let maximumWindowSeconds: Int64 = 7 * 86_400

    /// The window in seconds; `nil` when it does not parse or is out of range.
    public var windowSeconds: Int64? {
        RetentionPeriod(window).map(\.seconds).flatMap { $0 <= Self.maximumWindowSeconds ? $0 : nil }
    }

    /// The first rule it breaks, as `(field, message)` under its own name; `nil` when it is valid.
    public func problem() -> (field: String, message: String)? {
        guard (1...Self.maximumLimit).contains(limit) else { return ("limit", "must be 1–\(Self.maximumLimit)") }
        guard windowSeconds != nil else { return ("window", "must be a duration such as \"30m\", \"1h\" or \"1d\", at most 7 days") }
        return nil
    }

    /// The window as written back: `60m` is `1h`.
    public var normalized: Throttle {
        var copy = self
        if let seconds = windowSeconds, let period = RetentionPeriod(seconds: seconds) { copy.window = period.description }
        return copy
    }
}
