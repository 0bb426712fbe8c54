/// A user's session token: `<user id, hex>.<256 random bits, hex>`.
///
/// The token names its user so that the server finds the session by `(user_id, hash)`, the key of the
/// per-user `sessions` table; only the SHA-256 hash of the whole token is stored.
public struct SessionToken: Sendable, Equatable {
    public let userID: String
    public let text: String

    /// A new random token for `userID`.
    public static func generate(for userID: String) -> SessionToken {
        let text = Hex.encode(Array(userID.utf8)) + "." + SecureRandom.hexToken(byteCount: 32)
        return SessionToken(userID: userID, text: text)
    }

    /// Parses a presented token; `nil` when it is not of the session format. Reads the text's bytes in
    /// place: every authenticated request parses one.
    public init?(parsing text: String) {
        let characters = text.utf8
        guard let dot = characters.firstIndex(of: UInt8(ascii: ".")) else { return nil }
        // A second dot is not a hex digit: the secret then fails to decode.
        let secret = characters[characters.index(after: dot)...]
        guard secret.count == 64, Hex.decode(secret) != nil, let idBytes = Hex.decode(characters[..<dot]), !idBytes.isEmpty
        else { return nil }
        let id = String(decoding: idBytes, as: UTF8.self)
        guard UserID.problem(with: id) == nil else { return nil }
        self.init(userID: id, text: text)
    }

    private init(userID: String, text: String) {
        self.userID = userID
        self.text = text
    }

    /// What the database stores: SHA-256 of the token's text.
    public var hash: [UInt8] { SHA256.digest(Array(text.utf8)) }
}
