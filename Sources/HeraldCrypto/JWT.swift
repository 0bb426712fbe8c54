/// Compact JSON Web Tokens (RFC 7519): `base64url(header).base64url(claims).base64url(signature)`.
///
/// The JSON of the header and the claims is the caller's (each service wants its own fields, and
/// numbers as numbers); this only frames and signs it, and splits a token apart for verifiers.
public enum JWT {
    /// The token of `header` and `claims` (JSON texts), signed over its first two parts by `sign`.
    public static func make(header: String, claims: String, sign: ([UInt8]) -> [UInt8]) -> String {
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return signingInput + "." + Base64URL.encode(sign(Array(signingInput.utf8)))
    }

    /// A token taken apart: its header and claims as JSON bytes, what was signed, and the signature.
    public struct Parts: Sendable {
        public var header: [UInt8]
        public var claims: [UInt8]
        public var signingInput: [UInt8]
        public var signature: [UInt8]
    }

    /// The parts of `token`; `nil` when it is not three base64url parts.
    public static func parts(_ token: some StringProtocol) -> Parts? {
        let pieces = token.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count == 3, let header = Base64URL.decode(String(pieces[0])), let claims = Base64URL.decode(String(pieces[1])),
            let signature = Base64URL.decode(String(pieces[2]))
        else { return nil }
        return Parts(header: header, claims: claims, signingInput: Array((pieces[0] + "." + pieces[1]).utf8), signature: signature)
    }
}
