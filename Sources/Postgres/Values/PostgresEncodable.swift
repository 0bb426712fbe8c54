/// A Swift value that can be sent to PostgreSQL as a bound parameter in the binary format.
public protocol PostgresEncodable: Sendable {
    /// The parameter type sent with the statement so the server never has to guess.
    static var postgresType: PostgresDataType { get }
    /// Appends the binary representation of `self` (without a length prefix).
    func encode(into buffer: inout [UInt8])
}

/// A Swift value that can be read from a result column in the binary format.
public protocol PostgresDecodable: Sendable {
    /// Decodes a non-NULL value of the given server type.
    init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure)
    /// The value for SQL NULL; non-optional types throw.
    static func decodeNull() throws(PostgresDecodingFailure) -> Self
}

extension PostgresDecodable {
    public static func decodeNull() throws(PostgresDecodingFailure) -> Self {
        throw .unexpectedNull
    }
}

/// Why a single value failed to decode; `PostgresRow` wraps it with the column into `PostgresDecodingError`.
public enum PostgresDecodingFailure: Error, Sendable, Equatable {
    case unexpectedNull
    case typeMismatch
    case malformed(String)

    var reason: String {
        switch self {
        case .unexpectedNull: return "unexpected NULL"
        case .typeMismatch: return "type mismatch"
        case .malformed(let why): return why
        }
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        self = .some(try Wrapped(postgresBytes: bytes, type: type))
    }

    public static func decodeNull() throws(PostgresDecodingFailure) -> Self { nil }
}
