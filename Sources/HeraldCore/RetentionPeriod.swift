/// How long a channel keeps its notifications: a whole number of days, hours, minutes or seconds,
/// written `90d`, `12h`, `30m` or `45s`.
public struct RetentionPeriod: Sendable, Hashable, CustomStringConvertible {
    public let seconds: Int64

    /// The longest retention a channel can have: 100 years (of 366 days).
    public static let maximumSeconds: Int64 = 100 * 366 * 86_400

    private static let units: [(suffix: Character, seconds: Int64)] = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)]

    public init?(seconds: Int64) {
        guard (1...Self.maximumSeconds).contains(seconds) else { return nil }
        self.seconds = seconds
    }

    /// Parses `90d`, `12h`, `30m`, `45s`; `nil` for anything else, or outside 1 second … 100 years.
    public init?(_ text: String) {
        guard let suffix = text.last, let unit = Self.units.first(where: { $0.suffix == suffix }) else { return nil }
        let digits = text.dropLast()
        guard !digits.isEmpty, digits.count <= 12, digits.allSatisfy({ ("0"..."9").contains($0) }), let count = Int64(digits) else {
            return nil
        }
        self.init(seconds: count * unit.seconds)
    }

    /// The largest unit that divides it evenly: 86400 seconds is `1d`, 5400 is `90m`.
    public var description: String {
        let unit = Self.units.first { seconds % $0.seconds == 0 }!
        return "\(seconds / unit.seconds)\(unit.suffix)"
    }

    public static let problem =
        "must be a whole number of days, hours, minutes or seconds (like \"90d\", \"12h\", \"30m\", \"45s\"), at most 100 years"
}
