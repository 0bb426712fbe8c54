import Foundation
import HeraldCrypto

/// Voluntary application-server identification for Web Push (RFC 8292): an ES256 JWT for the push
/// service's origin, sent with the server's public key as `Authorization: vapid t=…, k=…`.
public enum VAPID {
    /// Push services refuse tokens that expire more than a day ahead.
    public static let maximumLifetime: TimeInterval = 24 * 3600

    /// The `Authorization` value for pushes to `audience` (an origin: `https://host[:port]`), from
    /// `key`, naming the operator's contact `subject` (`mailto:` or `https:`), valid until `expiresAt`.
    public static func authorization(key: P256Key, audience: String, subject: String, expiresAt: Date) -> String {
        let claims = #"{"aud":\#(JSONString.quoted(audience)),"exp":\#(Int64(expiresAt.timeIntervalSince1970)),"sub":\#(JSONString.quoted(subject))}"#
        let token = JWT.make(header: #"{"typ":"JWT","alg":"ES256"}"#, claims: claims, sign: key.sign)
        return "vapid t=\(token), k=\(Base64URL.encode(key.publicPoint))"
    }

    /// What a push service learns from a `vapid` authorization it accepts.
    public struct Verified: Sendable, Equatable {
        public var publicKey: [UInt8]
        public var audience: String
        public var subject: String
        public var expiresAt: Date
    }

    /// Checks an `Authorization` value as a push service does (the signature under `k`, the audience,
    /// an expiry within a day of `now`); `nil` when it does not pass.
    public static func verify(_ authorization: String, audience: String, now: Date) -> Verified? {
        guard authorization.lowercased().hasPrefix("vapid ") else { return nil }
        var fields: [String: String] = [:]
        for part in authorization.dropFirst("vapid ".count).split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
        }
        guard let token = fields["t"].flatMap(JWT.parts), let point = fields["k"].flatMap(Base64URL.decode),
            let key = P256PublicKey(point: point), key.isValidSignature(token.signature, for: token.signingInput),
            let header = try? JSONSerialization.jsonObject(with: Data(token.header)) as? [String: Any],
            header["alg"] as? String == "ES256",
            let claims = try? JSONSerialization.jsonObject(with: Data(token.claims)) as? [String: Any],
            claims["aud"] as? String == audience, let expiry = claims["exp"] as? Int, let subject = claims["sub"] as? String,
            subject.hasPrefix("mailto:") || subject.hasPrefix("https:")
        else { return nil }
        let expiresAt = Date(timeIntervalSince1970: TimeInterval(expiry))
        guard expiresAt > now, expiresAt.timeIntervalSince(now) <= maximumLifetime else { return nil }
        return Verified(publicKey: point, audience: audience, subject: subject, expiresAt: expiresAt)
    }
}
