import Foundation
import HeraldCore

/// Parsing a request body as JSON exactly as RFC 8259 writes it.
///
/// `JSONDecoder` reads only the values a type asks for, so an invalid value in a field nobody reads
/// (`{"a":-}`) would pass, and Foundation's parser takes a trailing comma (`[1,]`, `{"a":1,}`). Parsing
/// the whole body into a `JSONValue` checks every value; the trailing commas are looked for first.
enum StrictJSON {
    /// The body as a `JSONValue`, or `nil` when it is not valid JSON.
    static func parse(_ data: Data) -> JSONValue? {
        guard !hasTrailingComma(data) else { return nil }
        return try? JSONDecoder().decode(JSONValue.self, from: data)
    }

    /// Whether a `,` outside strings is followed, past whitespace, by `]` or `}`.
    static func hasTrailingComma(_ data: Data) -> Bool {
        var inString = false
        var escaped = false
        var afterComma = false
        for byte in data {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                continue
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if afterComma { return true }
            case UInt8(ascii: "\""):
                inString = true
            default:
                break
            }
            afterComma = byte == UInt8(ascii: ",")
        }
        return false
    }
}
