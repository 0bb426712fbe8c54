import HeraldCore

/// Finds the fields of a JSON body that the type decoding it never asks for: a misspelt optional field
/// (`"forcePush"` for `force_push`) would otherwise be a success that silently did less than asked.
///
/// The body is decoded a second time, from its parsed `JSONValue`, by a decoder that records every key
/// the type asks about — by `decode`, `decodeIfPresent` or `contains`, present or not — at each object's
/// JSON path. Synthesized and hand-written `Decodable` conformances both ask for every field they know,
/// so any other key is unknown. An object whose keys the type lists itself (`allKeys`: a free-form
/// `[String: JSONValue]` such as template data or variables) takes any key.
enum UnknownFields {
    /// The first unknown field, in key order depth first: its JSON path and the fields its object takes.
    /// `nil` when every field is known, or when the type cannot decode the value at all (the caller has
    /// already decoded it with `JSONDecoder`, whose error says what is wrong).
    static func first<T: Decodable>(in value: JSONValue, decoding type: T.Type) -> (path: String, known: [String])? {
        let recorder = Recorder()
        do {
            _ = try T(from: RecordingDecoder(value: value, path: "$", recorder: recorder))
        } catch {
            return nil
        }
        return recorder.firstUnknown(in: value, at: "$")
    }

    /// What the decoding asked for, by JSON path. Used by one decoding on one thread.
    final class Recorder {
        var asked: [String: Set<String>] = [:]
        /// Objects whose keys the type enumerated itself.
        var open: Set<String> = []

        func firstUnknown(in value: JSONValue, at path: String) -> (path: String, known: [String])? {
            switch value {
            case .object(let members):
                if !open.contains(path), let known = asked[path], let unknown = members.keys.sorted().first(where: { !known.contains($0) }) {
                    return (path + "." + unknown, known.sorted())
                }
                for key in members.keys.sorted() {
                    if let found = firstUnknown(in: members[key]!, at: path + "." + key) { return found }
                }
            case .array(let elements):
                for (index, element) in elements.enumerated() {
                    if let found = firstUnknown(in: element, at: "\(path)[\(index)]") { return found }
                }
            default:
                break
            }
            return nil
        }
    }

    struct RecordingDecoder: Decoder {
        let value: JSONValue
        let path: String
        let recorder: Recorder
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            guard case .object(let members) = value else { throw mismatch([String: JSONValue].self) }
            // Visited as an object with fields of its own, even if the type asks for none of them.
            if recorder.asked[path] == nil { recorder.asked[path] = [] }
            return KeyedDecodingContainer(KeyedContainer<Key>(members: members, path: path, recorder: recorder))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            guard case .array(let elements) = value else { throw mismatch([JSONValue].self) }
            return UnkeyedContainer(elements: elements, path: path, recorder: recorder)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            SingleValue(value: value, path: path, recorder: recorder)
        }

        func mismatch(_ type: Any.Type) -> DecodingError {
            .typeMismatch(type, .init(codingPath: [], debugDescription: "not a \(type) at \(path)"))
        }
    }

    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let members: [String: JSONValue]
        let path: String
        let recorder: Recorder
        var codingPath: [any CodingKey] { [] }

        var allKeys: [Key] {
            recorder.open.insert(path)
            return members.keys.compactMap(Key.init(stringValue:))
        }

        func contains(_ key: Key) -> Bool {
            recorder.asked[path, default: []].insert(key.stringValue)
            return members[key.stringValue] != nil
        }

        func decoder(for key: Key) throws -> RecordingDecoder {
            recorder.asked[path, default: []].insert(key.stringValue)
            guard let value = members[key.stringValue] else {
                throw DecodingError.keyNotFound(key, .init(codingPath: [], debugDescription: "missing at \(path)"))
            }
            return RecordingDecoder(value: value, path: path + "." + key.stringValue, recorder: recorder)
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            recorder.asked[path, default: []].insert(key.stringValue)
            return members[key.stringValue] == nil || members[key.stringValue] == .null
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try SingleValue(decoder: try decoder(for: key)).decode(type)
        }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try SingleValue(decoder: try decoder(for: key)).decode(type) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try SingleValue(decoder: try decoder(for: key)).decode(type) }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try decoder(for: key).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try decoder(for: key).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            RecordingDecoder(value: .object(members), path: path, recorder: recorder)
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            try decoder(for: key)
        }
    }

    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let elements: [JSONValue]
        let path: String
        let recorder: Recorder
        var codingPath: [any CodingKey] { [] }
        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }
        var currentIndex = 0

        init(elements: [JSONValue], path: String, recorder: Recorder) {
            self.elements = elements
            self.path = path
            self.recorder = recorder
        }

        mutating func next() throws -> RecordingDecoder {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(JSONValue.self, .init(codingPath: [], debugDescription: "array at \(path) ended"))
            }
            defer { currentIndex += 1 }
            return RecordingDecoder(value: elements[currentIndex], path: "\(path)[\(currentIndex)]", recorder: recorder)
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, elements[currentIndex] == .null else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try SingleValue(decoder: try next()).decode(type)
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: String.Type) throws -> String { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: Double.Type) throws -> Double { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: Float.Type) throws -> Float { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: Int.Type) throws -> Int { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try SingleValue(decoder: try next()).decode(type) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try SingleValue(decoder: try next()).decode(type) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            try next().container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            try next().unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder {
            try next()
        }
    }

    struct SingleValue: SingleValueDecodingContainer {
        let value: JSONValue
        let path: String
        let recorder: Recorder
        var codingPath: [any CodingKey] { [] }

        init(value: JSONValue, path: String, recorder: Recorder) {
            self.value = value
            self.path = path
            self.recorder = recorder
        }

        init(decoder: RecordingDecoder) {
            self.init(value: decoder.value, path: decoder.path, recorder: decoder.recorder)
        }

        var decoder: RecordingDecoder { RecordingDecoder(value: value, path: path, recorder: recorder) }

        func decodeNil() -> Bool { value == .null }

        func decode(_ type: Bool.Type) throws -> Bool {
            guard case .bool(let bool) = value else { throw decoder.mismatch(type) }
            return bool
        }

        func decode(_ type: String.Type) throws -> String {
            guard case .string(let text) = value else { throw decoder.mismatch(type) }
            return text
        }

        func decode(_ type: Double.Type) throws -> Double {
            guard case .number(let number) = value else { throw decoder.mismatch(type) }
            return number
        }

        func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }

        /// Any integer type: only its exactness matters here, the real decoding has checked the range.
        func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
            guard let integer = I(exactly: try decode(Double.self)) else { throw decoder.mismatch(type) }
            return integer
        }

        func decode(_ type: Int.Type) throws -> Int { try integer(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            // Scalars by type, so that nothing decodes them through a keyed container.
            if T.self == Bool.self { return try decode(Bool.self) as! T }
            if T.self == String.self { return try decode(String.self) as! T }
            if let number = T.self as? any BinaryFloatingPoint.Type { return number.init(try decode(Double.self)) as! T }
            if let integer = T.self as? any FixedWidthInteger.Type { return try self.integer(integer) as! T }
            return try T(from: decoder)
        }
    }
}
