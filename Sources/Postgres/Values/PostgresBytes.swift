/// A `bytea` value. A distinct type so that `[UInt8]` is never confused with an integer array.
public struct PostgresBytes: Sendable, Hashable, PostgresEncodable, PostgresDecodable {
    public var bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public static var postgresType: PostgresDataType { .bytea }

    public func encode(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: bytes)
    }

    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        guard type == .bytea else { throw .typeMismatch }
        self.bytes = Array(bytes)
    }
}
