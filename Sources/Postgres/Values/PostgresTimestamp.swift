import struct Foundation.Date

/// A `timestamptz` with the server's exact resolution: microseconds since 2000-01-01 00:00:00 UTC.
///
/// `Date` is a `Double` and cannot hold every microsecond exactly, so code that compares positions in
/// time (cursors, "newer than") should carry this type; `Date` converts to and from it by rounding.
public struct PostgresTimestamp: Sendable, Hashable, Comparable, PostgresEncodable, PostgresDecodable {
    /// Seconds between 1970-01-01 and 2000-01-01, the server's epoch.
    static let postgresEpochOffset: Int64 = 946_684_800

    public var microsecondsSince2000: Int64

    public init(microsecondsSince2000: Int64) {
        self.microsecondsSince2000 = microsecondsSince2000
    }

    public init(microsecondsSince1970: Int64) {
        self.microsecondsSince2000 = microsecondsSince1970 - Self.postgresEpochOffset * 1_000_000
    }

    /// Microseconds between 2000-01-01 and `Date`'s reference date, 2001-01-01 (2000 was a leap year).
    static let referenceDateOffset: Int64 = 31_622_400_000_000

    // Conversions go through `Date`'s own reference date, not 1970: the Double then holds a smaller
    // number, so microseconds stay exact for longer (to about 2140).
    public init(_ date: Date) {
        let micros = (date.timeIntervalSinceReferenceDate * 1_000_000).rounded()
        self.init(microsecondsSince2000: Int64(micros) + Self.referenceDateOffset)
    }

    public var microsecondsSince1970: Int64 {
        microsecondsSince2000 + Self.postgresEpochOffset * 1_000_000
    }

    public var date: Date {
        Date(timeIntervalSinceReferenceDate: Double(microsecondsSince2000 - Self.referenceDateOffset) / 1_000_000)
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.microsecondsSince2000 < rhs.microsecondsSince2000
    }

    public static var postgresType: PostgresDataType { .timestamptz }

    public func encode(into buffer: inout [UInt8]) {
        microsecondsSince2000.appendBigEndian(to: &buffer)
    }

    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        guard type == .timestamptz || type == .timestamp else { throw .typeMismatch }
        microsecondsSince2000 = try Int64.readBigEndian(bytes)
    }
}

extension Date: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .timestamptz }

    public func encode(into buffer: inout [UInt8]) {
        PostgresTimestamp(self).encode(into: &buffer)
    }

    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        self = try PostgresTimestamp(postgresBytes: bytes, type: type).date
    }
}
