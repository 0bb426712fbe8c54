import Foundation

/// The one JSON encoder configuration for what Herald writes through `Codable`: keys sorted (a
/// dictionary's order otherwise changes from one encoding to the next, and idempotency digests and
/// replayed answers must not) and slashes left as they are (`https://…`).
public enum CanonicalJSON {
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
