import Foundation

/// Builds provider tokens: `base64url(header).base64url(claims).base64url(signature)`.
///
/// Header `{"alg":"ES256","kid":…}`, claims `{"iss":team,"iat":seconds}` with `iat` a JSON number
/// (RFC 7519 NumericDate; APNs refuses the token when a library sends it as a string).
public enum APNsJWT {
    public static func make(key: ES256Key, keyID: String, teamID: String, issuedAt: Int64) -> String {
        let header = #"{"alg":"ES256","kid":"\#(keyID)","typ":"JWT"}"#
        let claims = #"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#
        let signingInput = base64URL(Array(header.utf8)) + "." + base64URL(Array(claims.utf8))
        return signingInput + "." + base64URL(key.sign(Array(signingInput.utf8)))
    }

    /// Unpadded base64url (RFC 4648 §5).
    public static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes unpadded base64url; nil when it is not.
    public static func decodeBase64URL(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }
}
