import Foundation

/// A wall-clock date and time without a zone (`2026-11-28T09:00`): "09:00 wherever the recipient
/// is". It becomes an instant only in a time zone.
public struct LocalDateTime: Sendable, Equatable, Comparable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int
    public var hour: Int
    public var minute: Int
    public var second: Int

    /// Parses `YYYY-MM-DDTHH:MM` or `YYYY-MM-DDTHH:MM:SS`, a date that exists; `nil` for anything
    /// else (an offset or `Z` included: that would be an instant).
    public init?(_ text: String) {
        let parts = text.split(separator: "T", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let date = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        let time = parts[1].split(separator: ":", omittingEmptySubsequences: false)
        guard date.count == 3, (2...3).contains(time.count),
            date[0].count == 4, date.dropFirst().allSatisfy({ $0.count == 2 }), time.allSatisfy({ $0.count == 2 }),
            (date + time).allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) })
        else { return nil }
        let numbers = (date + time).map { Int($0)! }
        (year, month, day, hour, minute) = (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4])
        second = numbers.count == 6 ? numbers[5] : 0
        guard (1...12).contains(month), (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second),
            let utc = TimeZone(identifier: "UTC"),
            Self.calendar(utc).date(from: components).map({ Self.calendar(utc).component(.day, from: $0) == day }) == true
        else { return nil }
    }

    /// `YYYY-MM-DDTHH:MM:SS`.
    public var description: String {
        String(format: "%04d-%02d-%02dT%02d:%02d:%02d", year, month, day, hour, minute, second)
    }

    public static func < (lhs: LocalDateTime, rhs: LocalDateTime) -> Bool { lhs.description < rhs.description }

    /// The instant it is this time in `zone`. A time a daylight-saving change skips (02:30 on the
    /// night clocks go forward) is read with the offset before the change, so it lands as late after
    /// the gap as it was into it (03:30); one it repeats is the first of the two.
    public func instant(in zone: TimeZone) -> Date {
        Self.calendar(zone).date(from: components)!
    }

    /// The same time `days` later on the calendar (the same wall clock across a daylight-saving
    /// change).
    public func adding(days: Int) -> LocalDateTime {
        let utc = TimeZone(identifier: "UTC")!
        let moved = Self.calendar(utc).date(byAdding: .day, value: days, to: instant(in: utc))!
        let parts = Self.calendar(utc).dateComponents([.year, .month, .day, .hour, .minute, .second], from: moved)
        return LocalDateTime(year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour!, minute: parts.minute!, second: parts.second!)
    }

    public init(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int = 0) {
        (self.year, self.month, self.day, self.hour, self.minute, self.second) = (year, month, day, hour, minute, second)
    }

    /// The wall clock in `zone` at `instant`.
    public init(_ instant: Date, in zone: TimeZone) {
        let parts = Self.calendar(zone).dateComponents([.year, .month, .day, .hour, .minute, .second], from: instant)
        self.init(year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour!, minute: parts.minute!, second: parts.second!)
    }

    var components: DateComponents {
        DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    static func calendar(_ zone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }

    /// The zone where a wall-clock time comes last (UTC−12): once it is past there, it is past
    /// everywhere.
    public static let lastZone = TimeZone(secondsFromGMT: -12 * 3600)!
}

extension LocalDateTime {
    /// The zone where a wall-clock time comes first (UTC+14).
    public static let firstZone = TimeZone(secondsFromGMT: 14 * 3600)!
}
