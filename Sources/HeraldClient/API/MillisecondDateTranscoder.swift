import Foundation
import OpenAPIRuntime

/// Herald's times, `2026-11-24T07:14:23.123Z` (RFC 3339, UTC, milliseconds), read and written without
/// building a formatter per value: on Linux Foundation's ISO 8601 parser sets up ICU locale data on
/// every call, which made decoding a page of 100 notifications cost ten times its HTTP round trip
/// (docs/benchmarks.md, "`client`"). Any other RFC 3339 shape falls back to Foundation.
struct MillisecondDateTranscoder: DateTranscoder {
    /// The nearest millisecond (Foundation's formatter truncates, so `.123` held as `.12299…` would go
    /// out as `.122`).
    func encode(_ date: Date) throws -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let days = milliseconds >= 0 ? milliseconds / 86_400_000 : (milliseconds - 86_399_999) / 86_400_000
        let inDay = milliseconds - days * 86_400_000
        // The civil date of a day number (Howard Hinnant's `civil_from_days`).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func digits(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(digits(year, 4))-\(digits(month, 2))-\(digits(day, 2))T\(digits(inDay / 3_600_000, 2)):\(digits(inDay / 60_000 % 60, 2)):"
            + "\(digits(inDay / 1000 % 60, 2)).\(digits(inDay % 1000, 3))Z"
    }

    func decode(_ text: String) throws -> Date {
        if let date = Self.fastParse(Array(text.utf8)) { return date }
        return try Date.ISO8601FormatStyle(includingFractionalSeconds: text.contains(".")).parse(text)
    }

    /// `YYYY-MM-DDThh:mm:ss.mmmZ` exactly, with every field in range; `nil` for anything else.
    static func fastParse(_ bytes: [UInt8]) -> Date? {
        guard bytes.count == 24, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"), bytes[19] == UInt8(ascii: "."), bytes[23] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19), let millisecond = number(20..<23),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let milliseconds = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millisecond
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
