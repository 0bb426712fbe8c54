/// A `jsonb` value carried as its UTF-8 JSON text.
///
/// The store decides how to produce and parse the text (usually `JSONEncoder`/`JSONDecoder`); this type
/// only moves it to and from the server. Decoding also accepts `json` columns.
public struct PostgresJSONB: Sendable, Hashable, PostgresEncodable, PostgresDecodable {
    public var utf8: [UInt8]

    public init(utf8: [UInt8]) { self.utf8 = utf8 }
    public init(_ text: String) { self.utf8 = Array(text.utf8) }

    public var text: String { String(decoding: utf8, as: UTF8.self) }

    public static var postgresType: PostgresDataType { .jsonb }

    public func encode(into buffer: inout [UInt8]) {
        buffer.append(1)  // jsonb binary format version
        buffer.append(contentsOf: utf8)
    }

    public init(postgresBytes bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresDecodingFailure) {
        switch type {
        case .jsonb:
            guard bytes.first == 1 else { throw .malformed("unknown jsonb version") }
            utf8 = Array(bytes.dropFirst())
        case .json, .text:
            utf8 = Array(bytes)
        default:
            throw .typeMismatch
        }
    }
}
