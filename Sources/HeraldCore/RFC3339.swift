import Foundation

/// RFC 3339 timestamps with milliseconds in UTC, the format of every time in Herald's API.
public enum RFC3339 {
    public static func string(from date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }
}
