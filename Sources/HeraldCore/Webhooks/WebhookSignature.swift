import Foundation

/// The `Herald-Signature` header of a webhook request: `t=<Unix seconds>,v1=<hex HMAC-SHA256>`, the
/// MAC taken with the webhook's secret over `"<t>." + body` — the scheme Stripe and Svix use. A
/// receiver recomputes it over the raw body, compares in constant time, and refuses a `t` more than
/// `tolerance` from its clock (a replay).
public enum WebhookSignature {
    public static let headerName = "Herald-Signature"
    /// How far from the receiver's clock a signature's time may be.
    public static let tolerance: TimeInterval = 300

    /// The header value for `body` signed at `timestamp` (Unix seconds).
    public static func header(secret: [UInt8], timestamp: Int, body: [UInt8]) -> String {
        "t=\(timestamp),v1=\(Hex.encode(mac(secret: secret, timestamp: timestamp, body: body)))"
    }

    /// Whether `header` signs `body` with `secret` at a time within `tolerance` of `now`.
    public static func verify(header: String, secret: [UInt8], body: [UInt8], now: Date = Date()) -> Bool {
        var timestamp: Int?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int(pair[1]) }
            if pair[0] == "v1" { signatures.append(pair[1]) }
        }
        guard let timestamp, abs(now.timeIntervalSince1970 - TimeInterval(timestamp)) <= tolerance else { return false }
        let expected = Hex.encode(mac(secret: secret, timestamp: timestamp, body: body))
        return signatures.contains { ConstantTime.equals($0, expected) }
    }

    private static func mac(secret: [UInt8], timestamp: Int, body: [UInt8]) -> [UInt8] {
        HMACSHA256.mac(key: secret, message: Array("\(timestamp).".utf8) + body)
    }
}
