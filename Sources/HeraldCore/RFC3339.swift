import Foundation

/// RFC 3339 timestamps with milliseconds in UTC, the format of every time in Herald's API.
public enum RFC3339 {
    public static func string(from date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }

    /// Parses an RFC 3339 date-time with or without fractional seconds, in UTC (`Z`) or with an offset.
    public static func date(from text: String) -> Date? {
        guard text.count <= 64 else { return nil }
        let fractional = text.contains(".")
        return try? Date.ISO8601FormatStyle(includingFractionalSeconds: fractional).parse(text)
    }
}
