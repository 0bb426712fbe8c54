import Foundation

/// JSON string literals for JSON written by hand: the fixed shapes of JWT headers and claims (and
/// push payloads, whose encoding is on every push's path).
public enum JSONString {
    /// `text` as a JSON string literal, quotes included: `"` and `\` escaped, control characters as
    /// `\u00XX`, everything else as it is.
    public static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20: result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
