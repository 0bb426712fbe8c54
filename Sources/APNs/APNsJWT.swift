import HeraldCrypto

/// Builds provider tokens: `base64url(header).base64url(claims).base64url(signature)`.
///
/// Header `{"alg":"ES256","kid":…}`, claims `{"iss":team,"iat":seconds}` with `iat` a JSON number
/// (RFC 7519 NumericDate; APNs refuses the token when a library sends it as a string).
public enum APNsJWT {
    public static func make(key: P256Key, keyID: String, teamID: String, issuedAt: Int64) -> String {
        JWT.make(header: #"{"alg":"ES256","kid":"\#(keyID)","typ":"JWT"}"#, claims: #"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#, sign: key.sign)
    }
}
