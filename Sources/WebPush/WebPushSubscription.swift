import Foundation
import HeraldCrypto

/// What a browser's `PushSubscription` gives an application server (its `toJSON()`): where to send,
/// and the keys to encrypt for.
public struct WebPushSubscription: Sendable, Equatable {
    /// The push service's URL for this subscription (HTTPS).
    public var endpoint: URL
    /// The user agent's P-256 public key, uncompressed (65 bytes; `keys.p256dh`).
    public var p256dh: [UInt8]
    /// The authentication secret (16 bytes; `keys.auth`).
    public var auth: [UInt8]

    /// Why a subscription's fields are refused: the field, as the JSON names it, and what is wrong.
    public struct Problem: Error, Equatable, Sendable {
        public var field: String
        public var message: String

        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }
    }

    /// Checks the fields as a browser sends them (`p256dh` and `auth` base64url, unpadded or padded).
    /// `allowHTTP` admits `http:` endpoints (a local push service in tests); production takes HTTPS only.
    public init(endpoint: String, p256dh: String, auth: String, allowHTTP: Bool = false) throws(Problem) {
        guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(), url.host?.isEmpty == false,
            scheme == "https" || (allowHTTP && scheme == "http"), endpoint.utf8.count <= 2048
        else {
            throw Problem(field: "endpoint", message: "must be the subscription's https:// URL (at most 2,048 characters)")
        }
        guard let point = Self.decode(p256dh), P256PublicKey(point: point) != nil else {
            throw Problem(field: "keys.p256dh", message: "must be the base64url of an uncompressed P-256 public key (65 bytes)")
        }
        guard let secret = Self.decode(auth), secret.count == 16 else {
            throw Problem(field: "keys.auth", message: "must be the base64url of the 16-byte authentication secret")
        }
        self.endpoint = url
        self.p256dh = point
        self.auth = secret
    }

    /// A subscription whose fields were checked before (when it was registered).
    public init(endpoint: URL, p256dh: [UInt8], auth: [UInt8]) {
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
    }

    /// The origin of the endpoint (`https://host[:port]`): the audience of its VAPID token.
    public var origin: String {
        let scheme = (endpoint.scheme ?? "https").lowercased()
        var host = (endpoint.host ?? "").lowercased()
        if host.contains(":") && !host.hasPrefix("[") { host = "[\(host)]" }
        var origin = scheme + "://" + host
        // A scheme's default port is not part of its serialized origin.
        if let port = endpoint.port, !(scheme == "https" && port == 443), !(scheme == "http" && port == 80) { origin += ":\(port)" }
        return origin
    }

    /// The request target of the endpoint (`:path`): its path and query as written, percent-encoding
    /// kept.
    public var requestTarget: String {
        let components = URLComponents(url: endpoint, resolvingAgainstBaseURL: false)
        var target = components?.percentEncodedPath ?? ""
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        return target
    }

    /// Base64url as browsers write it; some libraries pad it.
    private static func decode(_ text: String) -> [UInt8]? {
        var trimmed = Substring(text)
        while trimmed.last == "=" { trimmed = trimmed.dropLast() }
        return Base64URL.decode(String(trimmed))
    }
}
