import struct Foundation.UUID

extension Bool: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .bool }

    public func encode(into buffer: inout [UInt8]) {
        buffer.append(self ? 1 : 0)
    }

    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        guard type == .bool else { throw .typeMismatch }
        guard bytes.count == 1 else { throw .malformed("bool must be one byte") }
        self = bytes[0] != 0
    }
}

extension Double: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .float8 }

    public func encode(into buffer: inout [UInt8]) {
        bitPattern.appendBigEndian(to: &buffer)
    }

    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        switch type {
        case .float8: self = Double(bitPattern: try UInt64.readBigEndian(bytes))
        case .float4: self = Double(Float(bitPattern: try UInt32.readBigEndian(bytes)))
        default: throw .typeMismatch
        }
    }
}

extension String: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .text }

    public func encode(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: utf8)
    }

    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        switch type {
        case .text, .varchar, .name, .bpchar, .unknown, .json:
            self = String(decoding: bytes, as: UTF8.self)
        case .jsonb:
            // Binary jsonb is a version byte (1) followed by the JSON text.
            guard bytes.first == 1 else { throw .malformed("unknown jsonb version") }
            self = String(decoding: UnsafeRawBufferPointer(rebasing: bytes.dropFirst()), as: UTF8.self)
        default:
            throw .typeMismatch
        }
    }
}

extension UUID: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .uuid }

    public func encode(into buffer: inout [UInt8]) {
        withUnsafeBytes(of: uuid) { buffer.append(contentsOf: $0) }
    }

    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        guard type == .uuid else { throw .typeMismatch }
        guard bytes.count == 16 else { throw .malformed("uuid must be 16 bytes") }
        var raw: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &raw) { $0.copyMemory(from: bytes) }
        self.init(uuid: raw)
    }
}
