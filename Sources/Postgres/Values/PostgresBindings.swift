/// The bound parameters of a statement: their types and binary values (`nil` is SQL NULL).
///
/// Values are kept in one contiguous buffer so sending a statement needs a single allocation.
public struct PostgresBindings: Sendable {
    var types: [PostgresDataType] = []
    var offsets: [Int] = []
    var lengths: [Int32] = []
    var bytes: [UInt8] = []

    public init() {}

    public var count: Int { types.count }

    /// Appends a non-NULL value.
    public mutating func append<Value: PostgresEncodable>(_ value: Value) {
        types.append(Value.postgresType)
        let start = bytes.count
        value.encode(into: &bytes)
        offsets.append(start)
        lengths.append(Int32(bytes.count - start))
    }

    /// Appends every value of `other`, after the ones already here.
    public mutating func append(contentsOf other: PostgresBindings) {
        let base = bytes.count
        types += other.types
        offsets += other.offsets.map { $0 + base }
        lengths += other.lengths
        bytes += other.bytes
    }

    /// Appends a value that may be NULL; the type is still sent so the server can resolve `$n`.
    public mutating func append<Value: PostgresEncodable>(_ value: Value?) {
        if let value {
            append(value)
        } else {
            types.append(Value.postgresType)
            offsets.append(bytes.count)
            lengths.append(-1)
        }
    }
}
