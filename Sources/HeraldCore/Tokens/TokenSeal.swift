/// The framing every opaque sync token shares: a payload whose first byte names the token's format
/// (1: a collection's `SyncToken`, 2: a `ChannelListToken`; a new version takes a new byte), big-endian
/// integers after it, then an HMAC-SHA256 tag over the payload truncated to 128 bits, all as URL-safe
/// base64. The format byte is under the tag, so one kind of token can never be read as another.
public enum TokenSeal {
    static let tagLength = 16
    /// Longer texts are refused before any decoding (the longest token today has 57 bytes: 76 characters).
    static let maximumTextLength = 128

    /// The payload and its tag as text.
    static func seal(_ payload: TokenPayload, key: [UInt8]) -> String {
        Base64URL.encode(payload.bytes + HMACSHA256.mac(key: key, message: payload.bytes).prefix(tagLength))
    }

    /// The payload of an authentic token of `format` with exactly `payloadLength` bytes, positioned
    /// after the format byte; `nil` when the text is malformed, of another format or length, or its tag
    /// does not match (forged or edited).
    static func open(_ text: String, key: [UInt8], format: UInt8, payloadLength: Int) -> TokenPayload? {
        guard text.utf8.count <= maximumTextLength, let bytes = Base64URL.decode(text),
            bytes.count == payloadLength + tagLength, bytes[0] == format
        else { return nil }
        let payload = Array(bytes.prefix(payloadLength))
        let tag = Array(bytes.suffix(tagLength))
        guard ConstantTime.equals(Array(HMACSHA256.mac(key: key, message: payload).prefix(tagLength)), tag) else { return nil }
        return TokenPayload(bytes: payload, offset: 1)
    }
}

/// A token's bytes before sealing, or after opening: written and read in order.
struct TokenPayload {
    private(set) var bytes: [UInt8]
    private var offset: Int

    init(format: UInt8) {
        bytes = [format]
        offset = 1
    }

    fileprivate init(bytes: [UInt8], offset: Int) {
        self.bytes = bytes
        self.offset = offset
    }

    mutating func append<I: FixedWidthInteger>(_ value: I) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// The next integer; `TokenSeal.open` checked the length, so every read the format names is there.
    mutating func read<I: FixedWidthInteger>(_: I.Type) -> I {
        defer { offset += MemoryLayout<I>.size }
        return bytes[offset..<offset + MemoryLayout<I>.size].reduce(I.zero) { $0 << 8 | I($1) }
    }
}
