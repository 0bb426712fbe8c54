import AsyncHTTPClient
import Foundation
import HeraldCrypto
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// Sends Web Push messages (RFC 8030) to browsers' push services, encrypted for each subscription
/// (RFC 8291) and signed with the server's VAPID key (RFC 8292).
///
/// Requests go through AsyncHTTPClient, whose pool keeps a connection per push service (each
/// browser's vendor runs its own: one host each). A VAPID token is made once per push service's
/// origin and used until an hour before it expires.
public final class WebPushClient: Sendable {
    /// How urgently the user agent should be woken (RFC 8030 §5.3).
    public enum Urgency: String, Sendable {
        case veryLow = "very-low"
        case low
        case normal
        case high
    }

    /// One message's delivery options.
    public struct Options: Sendable {
        /// How long the push service keeps it for an offline browser, in seconds.
        public var timeToLive: Int
        public var urgency: Urgency
        /// Replaces a queued message with the same topic (at most 32 base64url characters).
        public var topic: String?

        public init(timeToLive: Int, urgency: Urgency, topic: String? = nil) {
            self.timeToLive = timeToLive
            self.urgency = urgency
            self.topic = topic
        }
    }

    private struct Token {
        var authorization: String
        var renewAt: Date
    }

    public let key: P256Key
    /// The operator's contact in every token (`mailto:` or `https:`).
    public let subject: String
    private let http: HTTPClient
    private let logger: Logger
    private let timeout: Duration
    private let now: @Sendable () -> Date
    private let tokens = Mutex([String: Token]())
    static let tokenLifetime: TimeInterval = 12 * 3600
    static let renewalMargin: TimeInterval = 3600

    public init(
        key: P256Key,
        subject: String,
        http: HTTPClient,
        logger: Logger,
        timeout: Duration = .seconds(10),
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.key = key
        self.subject = subject
        self.http = http
        self.logger = logger
        self.timeout = timeout
        self.now = now
    }

    /// Encrypts `payload` for `subscription` and sends it; what the answer means (network failures
    /// and timeouts are `.retry`).
    public func send(_ payload: [UInt8], to subscription: WebPushSubscription, options: Options) async -> WebPushOutcome {
        let body: [UInt8]
        do {
            body = try WebPushPayload.encrypt(payload, p256dh: subscription.p256dh, auth: subscription.auth)
        } catch {
            // Refused before sending, as the push service would: too large (413), or keys it cannot use.
            return .rejected(status: error == .tooLarge ? 413 : 400)
        }
        var request = HTTPClientRequest(url: subscription.endpoint.absoluteString)
        request.method = .POST
        request.headers.add(name: "Authorization", value: authorization(for: subscription.origin))
        request.headers.add(name: "TTL", value: String(max(0, options.timeToLive)))
        request.headers.add(name: "Urgency", value: options.urgency.rawValue)
        if let topic = options.topic { request.headers.add(name: "Topic", value: topic) }
        request.headers.add(name: "Content-Encoding", value: "aes128gcm")
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await http.execute(request, timeout: .init(timeout))
            _ = try await response.body.collect(upTo: 64 * 1024)
            return WebPushOutcome(status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"))
        } catch {
            logger.notice("a push service could not be reached", metadata: ["origin": "\(subscription.origin)", "error": "\(error)"])
            return .retry(status: 0, retryAfter: nil)
        }
    }

    /// The `Authorization` value for pushes to `origin`, made again an hour before it expires.
    func authorization(for origin: String) -> String {
        let moment = now()
        if let token = tokens.withLock({ $0[origin] }), token.renewAt > moment { return token.authorization }
        let authorization = VAPID.authorization(key: key, audience: origin, subject: subject, expiresAt: moment + Self.tokenLifetime)
        tokens.withLock { $0[origin] = Token(authorization: authorization, renewAt: moment + Self.tokenLifetime - Self.renewalMargin) }
        return authorization
    }

    /// A topic for `text` (a user's id, say): its SHA-256, base64url, cut to the 32 characters a topic
    /// may have, so that any text makes a valid one and none is revealed to the push service.
    public static func topic(for text: String) -> String {
        String(Base64URL.encode(SHA256.digest(Array(text.utf8))).prefix(32))
    }
}
