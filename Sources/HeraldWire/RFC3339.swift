import Foundation

/// RFC 3339 timestamps with milliseconds in UTC, the format of every time in Herald's API.
public enum RFC3339 {
    /// `date` to the millisecond (rounded down), e.g. `2026-11-22T05:40:33.123Z`.
    ///
    /// Written out by hand: Foundation's formatter goes through a calendar and cost more than the rest
    /// of encoding a sync answer. Years outside 0001…9999 fall back to Foundation.
    public static func string(from date: Date) -> String {
        guard date.timeIntervalSince1970.magnitude < 250_000_000_000 else {
            return Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
        }
        let milliseconds = milliseconds(from: date)
        let days = milliseconds >= 0 ? milliseconds / 86_400_000 : (milliseconds - 86_399_999) / 86_400_000
        let (year, month, day) = civil(days: days)
        guard (1...9999).contains(year) else {
            return Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
        }
        let inDay = Int(milliseconds - days * 86_400_000)
        var bytes = [UInt8](repeating: 0, count: 24)
        func put(_ value: Int, _ width: Int, at offset: Int) {
            var value = value
            for index in stride(from: offset + width - 1, through: offset, by: -1) {
                bytes[index] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
        }
        put(year, 4, at: 0)
        put(month, 2, at: 5)
        put(day, 2, at: 8)
        put(inDay / 3_600_000, 2, at: 11)
        put(inDay / 60_000 % 60, 2, at: 14)
        put(inDay / 1000 % 60, 2, at: 17)
        put(inDay % 1000, 3, at: 20)
        for (offset, character) in [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":"), (19, "."), (23, "Z")] as [(Int, Unicode.Scalar)] {
            bytes[offset] = UInt8(ascii: character)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Milliseconds since 1970, rounded down. Times come from PostgreSQL in whole microseconds; half a
    /// microsecond is added first so that one stored as `.123000` never reads back as `.122999…`
    /// (computed from `Date`'s own reference date, 2001, where the Double is exact enough for that).
    public static func milliseconds(from date: Date) -> Int64 {
        Int64((date.timeIntervalSinceReferenceDate * 1000 + 0.0005).rounded(.down)) + 978_307_200_000
    }

    /// The proleptic Gregorian date of a day number (days since 1970-01-01); Howard Hinnant's
    /// `civil_from_days`.
    private static func civil(days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day))
    }

    /// Parses an RFC 3339 date-time with or without fractional seconds, in UTC (`Z`) or with an offset.
    /// Fields out of range (`2024-02-30`, `24:00`) are refused: Foundation's parser rolls them over into
    /// the next day or month.
    ///
    /// Herald's own shape (`YYYY-MM-DDThh:mm:ss.mmmZ`) is read by hand: on Linux Foundation's parser sets
    /// up ICU locale data on every call, which made reading the times dominate the client's decoding of
    /// a page of notifications (docs/decisions/2026-11-24-client-library-large-collection.md).
    public static func date(from text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count <= 64, fieldsInRange(bytes) else { return nil }
        if let date = millisecondDate(bytes) { return date }
        let fractional = text.contains(".")
        return try? Date.ISO8601FormatStyle(includingFractionalSeconds: fractional).parse(text)
    }

    /// `YYYY-MM-DDThh:mm:ss.mmmZ` exactly (its fields already checked by `fieldsInRange`); `nil` for any
    /// other shape.
    static func millisecondDate(_ bytes: [UInt8]) -> Date? {
        guard bytes.count == 24, bytes[19] == UInt8(ascii: "."), bytes[23] == UInt8(ascii: "Z"),
            bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":")
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19), let millisecond = number(20..<23)
        else { return nil }
        let milliseconds = ((days(year: year, month: month, day: day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millisecond
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// The day number (days since 1970-01-01) of a proleptic Gregorian date; Howard Hinnant's
    /// `days_from_civil`, the inverse of `civil(days:)`.
    private static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Whether `YYYY-MM-DDThh:mm:ss` at the start of `bytes` names a real day and time of day (RFC 3339
    /// §5.7; a leap second is not accepted).
    static func fieldsInRange(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 19 else { return false }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second)
        else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return (1...days).contains(day)
    }
}
