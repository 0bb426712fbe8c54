extension FixedWidthInteger {
    /// Appends the big-endian (network order) bytes used by the binary wire format.
    @inlinable
    func appendBigEndian(to buffer: inout [UInt8]) {
        withUnsafeBytes(of: self.bigEndian) { buffer.append(contentsOf: $0) }
    }

    /// Reads a big-endian integer of exactly `Self`'s width.
    @inlinable
    static func readBigEndian(_ bytes: UnsafeRawBufferPointer) throws(PostgresDecodingFailure) -> Self {
        guard bytes.count == MemoryLayout<Self>.size else {
            throw .malformed("expected \(MemoryLayout<Self>.size) bytes, got \(bytes.count)")
        }
        return Self(bigEndian: bytes.loadUnaligned(as: Self.self))
    }
}

/// Decodes any of the server's integer types into a wider or equal Swift integer.
private func decodeInteger<I: FixedWidthInteger>(
    _ bytes: UnsafeRawBufferPointer,
    type: PostgresDataType
) throws(PostgresDecodingFailure) -> I {
    let wide: Int64
    switch type {
    case .int2: wide = Int64(try Int16.readBigEndian(bytes))
    case .int4: wide = Int64(try Int32.readBigEndian(bytes))
    case .int8: wide = try Int64.readBigEndian(bytes)
    case .oidType: wide = Int64(try UInt32.readBigEndian(bytes))
    default: throw .typeMismatch
    }
    guard let value = I(exactly: wide) else { throw .malformed("\(wide) does not fit") }
    return value
}

extension Int: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .int8 }

    public func encode(into buffer: inout [UInt8]) {
        Int64(self).appendBigEndian(to: &buffer)
    }

    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        self = try decodeInteger(bytes, type: type)
    }
}

extension Int64: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .int8 }

    public func encode(into buffer: inout [UInt8]) {
        appendBigEndian(to: &buffer)
    }

    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        self = try decodeInteger(bytes, type: type)
    }
}

extension Int32: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .int4 }

    public func encode(into buffer: inout [UInt8]) {
        appendBigEndian(to: &buffer)
    }

    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        self = try decodeInteger(bytes, type: type)
    }
}

extension Int16: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .int2 }

    public func encode(into buffer: inout [UInt8]) {
        appendBigEndian(to: &buffer)
    }

    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        self = try decodeInteger(bytes, type: type)
    }
}
