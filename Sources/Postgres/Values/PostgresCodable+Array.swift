/// An element type that can travel inside a one-dimensional PostgreSQL array.
public protocol PostgresArrayElement: PostgresEncodable, PostgresDecodable {
    /// The array type whose elements are `postgresType` (for example `text[]` for `text`).
    static var postgresArrayType: PostgresDataType { get }
}

extension String: PostgresArrayElement {
    public static var postgresArrayType: PostgresDataType { .textArray }
}

extension Int: PostgresArrayElement {
    public static var postgresArrayType: PostgresDataType { .int8Array }
}

extension Int64: PostgresArrayElement {
    public static var postgresArrayType: PostgresDataType { .int8Array }
}

extension Int32: PostgresArrayElement {
    public static var postgresArrayType: PostgresDataType { .int4Array }
}

extension Bool: PostgresArrayElement {
    public static var postgresArrayType: PostgresDataType { .boolArray }
}

extension PostgresJSONB: PostgresArrayElement {
    public static var postgresArrayType: PostgresDataType { .jsonbArray }
}

extension PostgresTimestamp: PostgresArrayElement {
    public static var postgresArrayType: PostgresDataType { .timestamptzArray }
}

/// Arrays use the server's binary array layout: dimensions, a has-NULL flag, the element type, one
/// (length, lower bound) pair per dimension, then each element with an `int4` length prefix.
extension Array: PostgresEncodable where Element: PostgresArrayElement {
    public static var postgresType: PostgresDataType { Element.postgresArrayType }

    public func encode(into buffer: inout [UInt8]) {
        if isEmpty {
            Int32(0).appendBigEndian(to: &buffer)  // zero dimensions is how the server spells '{}'
            Int32(0).appendBigEndian(to: &buffer)
            Element.postgresType.oid.appendBigEndian(to: &buffer)
            return
        }
        Int32(1).appendBigEndian(to: &buffer)
        Int32(0).appendBigEndian(to: &buffer)
        Element.postgresType.oid.appendBigEndian(to: &buffer)
        Int32(count).appendBigEndian(to: &buffer)
        Int32(1).appendBigEndian(to: &buffer)
        for element in self {
            let lengthAt = buffer.count
            Int32(0).appendBigEndian(to: &buffer)
            element.encode(into: &buffer)
            let length = Int32(buffer.count - lengthAt - 4).bigEndian
            Swift.withUnsafeBytes(of: length) { lengthBytes in
                for index in 0..<4 { buffer[lengthAt + index] = lengthBytes[index] }
            }
        }
    }
}

extension Array: PostgresDecodable where Element: PostgresArrayElement {
    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        var reader = BinaryReader(bytes)
        let dimensions = try reader.read(Int32.self)
        _ = try reader.read(Int32.self)  // has-NULL flag; NULL elements are rejected below
        let elementType = PostgresDataType(try reader.read(UInt32.self))
        if dimensions == 0 {
            self = []
            return
        }
        guard dimensions == 1 else { throw .malformed("only one-dimensional arrays are supported") }
        let count = Int(try reader.read(Int32.self))
        _ = try reader.read(Int32.self)  // lower bound
        var result: [Element] = []
        result.reserveCapacity(count)
        for _ in 0..<count {
            let length = Int(try reader.read(Int32.self))
            guard length >= 0 else { throw .malformed("NULL array element") }
            result.append(try Element(postgresBytes: try reader.take(length), type: elementType))
        }
        self = result
    }
}

/// Sequential reads over a binary value.
struct BinaryReader {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func take(_ count: Int) throws(PostgresDecodingFailure) -> UnsafeRawBufferPointer {
        guard count <= bytes.count - offset else { throw .malformed("value is truncated") }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    mutating func read<I: FixedWidthInteger>(_: I.Type) throws(PostgresDecodingFailure) -> I {
        try I.readBigEndian(try take(MemoryLayout<I>.size))
    }
}
