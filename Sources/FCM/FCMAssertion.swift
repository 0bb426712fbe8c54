import Foundation
import HeraldCrypto

/// The OAuth 2.0 assertion a service account trades for an access token (RFC 7523): an RS256 JWT from
/// the account's email to its token endpoint, for the Firebase Cloud Messaging scope, valid an hour.
public enum FCMAssertion {
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The longest life the token endpoint accepts.
    public static let lifetime: TimeInterval = 3600
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// The signed assertion, issued at `issuedAt`.
    public static func make(_ account: FCMServiceAccount, issuedAt: Date) -> String {
        let issued = Int64(issuedAt.timeIntervalSince1970)
        let header = #"{"alg":"RS256","typ":"JWT","kid":\#(JSONString.quoted(account.privateKeyID))}"#
        let claims =
            #"{"iss":\#(JSONString.quoted(account.clientEmail)),"scope":"\#(scope)","aud":\#(JSONString.quoted(account.tokenURI.absoluteString)),"#
            + #""iat":\#(issued),"exp":\#(issued + Int64(lifetime))}"#
        return JWT.make(header: header, claims: claims, sign: account.key.sign)
    }

    /// The form body of the token request.
    public static func tokenRequestBody(_ assertion: String) -> String {
        "grant_type=" + grantType.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! + "&assertion=" + assertion
    }

    /// What a token endpoint learns from an assertion it accepts.
    public struct Verified: Sendable, Equatable {
        public var issuer: String
        public var keyID: String
        public var issuedAt: Date
    }

    /// Checks an assertion as the token endpoint does: the RS256 signature under `publicKey`, the
    /// audience, the scope, and a life of at most an hour that includes `now`.
    public static func verify(_ assertion: String, publicKey: RS256PublicKey, audience: String, now: Date) -> Verified? {
        guard let token = JWT.parts(assertion), publicKey.isValidSignature(token.signature, for: token.signingInput),
            let header = try? JSONSerialization.jsonObject(with: Data(token.header)) as? [String: Any],
            header["alg"] as? String == "RS256", let keyID = header["kid"] as? String,
            let claims = try? JSONSerialization.jsonObject(with: Data(token.claims)) as? [String: Any],
            let issuer = claims["iss"] as? String, claims["aud"] as? String == audience, claims["scope"] as? String == scope,
            let issued = claims["iat"] as? Int, let expiry = claims["exp"] as? Int,
            expiry > issued, TimeInterval(expiry - issued) <= lifetime,
            TimeInterval(issued) <= now.timeIntervalSince1970 + 60, TimeInterval(expiry) > now.timeIntervalSince1970
        else { return nil }
        return Verified(issuer: issuer, keyID: keyID, issuedAt: Date(timeIntervalSince1970: TimeInterval(issued)))
    }
}
