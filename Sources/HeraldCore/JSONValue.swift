import Foundation

/// Any JSON value, kept as parsed (templates carry arbitrary JSON data): the type the client library
/// shares, under the name the server's code has always used.
public typealias JSONValue = HeraldJSON

extension HeraldJSON {
    /// Every string in this value with its JSON path (`$.a.b[0]`), depth first.
    func strings(at path: String = "$") -> [(path: String, text: String)] {
        switch self {
        case .string(let text): return [(path, text)]
        case .array(let values): return values.enumerated().flatMap { $0.element.strings(at: "\(path)[\($0.offset)]") }
        case .object(let members): return members.keys.sorted().flatMap { members[$0]!.strings(at: "\(path).\($0)") }
        default: return []
        }
    }

    /// The same value with every string replaced by `transform(string)`.
    func mappingStrings(_ transform: (String) throws -> String) rethrows -> JSONValue {
        switch self {
        case .string(let text): return .string(try transform(text))
        case .array(let values): return .array(try values.map { try $0.mappingStrings(transform) })
        case .object(let members): return .object(try members.mapValues { try $0.mappingStrings(transform) })
        default: return self
        }
    }
}

extension JSONValue {
    /// The size of this value encoded as compact JSON, in bytes.
    public var encodedSize: Int {
        (try? JSONEncoder().encode(self).count) ?? 0
    }

    /// How deeply arrays and objects nest (a scalar is 0, `[1]` is 1).
    public var depth: Int {
        switch self {
        case .array(let values): return 1 + (values.map(\.depth).max() ?? 0)
        case .object(let members): return 1 + (members.values.map(\.depth).max() ?? 0)
        default: return 0
        }
    }
}
