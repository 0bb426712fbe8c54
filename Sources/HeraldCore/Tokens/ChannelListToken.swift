/// The token the channel list's change log continues from: whose list, and the change horizon the
/// list was complete below when the token was issued (every change below it was in that answer; the
/// next answer holds the entries changed at or above it). Sealed by `TokenSeal` like a collection's
/// `SyncToken`, under another format byte, so neither passes for the other.
public struct ChannelListToken: Sendable, Equatable {
    public var userKey: Int64
    public var horizon: Int64

    public init(userKey: Int64, horizon: Int64) {
        self.userKey = userKey
        self.horizon = horizon
    }

    static let format: UInt8 = 2
    static let payloadLength = 1 + 8 + 8

    /// The token as URL-safe base64 text.
    public func encoded(key: [UInt8]) -> String {
        var payload = TokenPayload(format: Self.format)
        payload.append(userKey)
        payload.append(horizon)
        return TokenSeal.seal(payload, key: key)
    }

    /// Parses and authenticates a token; `nil` when it is malformed, of another format, or forged.
    public init?(decoding text: String, key: [UInt8]) {
        guard var payload = TokenSeal.open(text, key: key, format: Self.format, payloadLength: Self.payloadLength) else { return nil }
        userKey = payload.read(Int64.self)
        horizon = payload.read(Int64.self)
    }
}
