import HeraldCore
import Postgres

/// How a client names one of its devices — in `Herald-Device`, `?device=` or a path: by Herald's id
/// (decimal, as `GET /v1/me/devices` lists it) or by its APNs token (hex). The two cannot be confused:
/// an id has at most 19 digits, a token at least 64.
public enum DeviceReference: Sendable, Hashable {
    case id(Int64)
    case token(String)

    /// `nil` when `text` is neither a canonical id nor a well-formed token.
    public init?(_ text: some StringProtocol) {
        if let id = CanonicalInteger.id(text) {
            self = .id(id)
        } else if Self.isToken(text) {
            self = .token(String(text).lowercased())
        } else {
            return nil
        }
    }

    /// An APNs device token: hex, an even number of digits, 32 to 200 bytes once decoded (Apple's are
    /// 32 today; nothing promises they stay so).
    public static func isToken(_ text: some StringProtocol) -> Bool {
        let utf8 = text.utf8
        return (64...400).contains(utf8.count) && utf8.count.isMultiple(of: 2)
            && utf8.allSatisfy { byte in
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
            }
    }

    /// What a client is told when its reference does not parse.
    public static let formatDescription = "a device id (as GET /v1/me/devices lists it) or the device's APNs token (hex, 64–400 digits)"

    /// SQL true for the row of `devices` this names (an APNs token names an APNs device only).
    var condition: PostgresQuery {
        switch self {
        case .id(let id): "id = \(id)"
        case .token(let token): "(token = \(token) AND service = 'apns')"
        }
    }

    var id: Int64? {
        if case .id(let id) = self { return id }
        return nil
    }

    var token: String? {
        if case .token(let token) = self { return token }
        return nil
    }
}
