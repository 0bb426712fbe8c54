import Foundation

/// Any JSON value, kept as parsed: a notification's rendered `data` is whatever its template makes, so
/// the server stores it and the client hands it to the app as JSON rather than guessing a type.
public enum HeraldJSON: Sendable, Hashable, Codable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case array([HeraldJSON])
    case object([String: HeraldJSON])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([HeraldJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: HeraldJSON].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .null: try container.encodeNil()
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The member `key` of an object (`nil` for anything else or a missing key).
    public subscript(key: String) -> HeraldJSON? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The text of a string value.
    public var stringValue: String? {
        guard case .string(let text) = self else { return nil }
        return text
    }

    /// The value of a number.
    public var numberValue: Double? {
        guard case .number(let number) = self else { return nil }
        return number
    }
}
