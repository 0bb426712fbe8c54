import AsyncHTTPClient
import Foundation
import HTTP2Streams
import HeraldCrypto
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOSSL
import Synchronization

/// Sends Web Push messages (RFC 8030) to browsers' push services, encrypted for each subscription
/// (RFC 8291) and signed with the server's VAPID key (RFC 8292).
///
/// Each push service's origin gets a few HTTP/2 connections of its own on the frame-level stack the
/// APNs and FCM clients use (`HTTP2ConnectionPool`): every browser vendor's service takes many small
/// requests to one host, which AsyncHTTPClient served at several times the CPU per request
/// (docs/benchmarks.md, "push services end to end"). A service that does not agree to HTTP/2 in the
/// TLS handshake is sent to through AsyncHTTPClient instead. A VAPID token is made once per origin and
/// used until an hour before it expires.
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

    /// A payload for one subscription.
    public struct Message: Sendable {
        public var payload: [UInt8]
        public var subscription: WebPushSubscription
        public var options: Options

        public init(payload: [UInt8], subscription: WebPushSubscription, options: Options) {
            self.payload = payload
            self.subscription = subscription
            self.options = options
        }
    }

    public struct Configuration: Sendable {
        /// Every message's deadline, from when its batch is handed to a connection.
        public var timeout: Duration
        /// PEM files of extra trust roots (`HERALD_PUSH_CA_FILE`).
        public var additionalTrustRootFiles: [String]
        /// HTTP/2 connections to each push service's origin, used in turn.
        public var connections: Int
        /// Messages in flight at once per connection, at most (fewer if the service says so); as many
        /// per origin through AsyncHTTPClient.
        public var maximumInFlight: Int

        public init(timeout: Duration = .seconds(10), additionalTrustRootFiles: [String] = [], connections: Int = 2, maximumInFlight: Int = 100) {
            self.timeout = timeout
            self.additionalTrustRootFiles = additionalTrustRootFiles
            self.connections = connections
            self.maximumInFlight = maximumInFlight
        }
    }

    private struct Token {
        var authorization: String
        var renewAt: Date
    }

    /// A message's encrypted body, or the outcome that refuses it before it is sent.
    private enum Encrypted: Sendable {
        case body([UInt8])
        case refused(WebPushOutcome)
    }

    /// A message ready to go: its encrypted body.
    private struct Sealed: Sendable {
        var index: Int
        var message: Message
        var body: [UInt8]
    }

    public let key: P256Key
    /// The operator's contact in every token (`mailto:` or `https:`).
    public let subject: String
    let configuration: Configuration
    /// For push services that do not speak HTTP/2.
    private let http: HTTPClient
    private let connections: PushServiceConnections
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let tokens = Mutex([String: Token]())
    static let tokenLifetime: TimeInterval = 12 * 3600
    static let renewalMargin: TimeInterval = 3600

    /// A client signing with `key`; `http` (the caller's) serves push services without HTTP/2.
    /// Throws if a trust root file cannot be read.
    public init(
        key: P256Key,
        subject: String,
        configuration: Configuration = Configuration(),
        http: HTTPClient,
        logger: Logger,
        now: @escaping @Sendable () -> Date = Date.init
    ) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        // HTTP/1.1 too: a service that takes only it says so, and is then sent to another way.
        tls.applicationProtocols = ["h2", "http/1.1"]
        tls.minimumTLSVersion = .tlsv12
        tls.additionalTrustRoots = configuration.additionalTrustRootFiles.map { .file($0) }
        self.key = key
        self.subject = subject
        self.configuration = configuration
        self.http = http
        self.connections = PushServiceConnections(
            tls: try NIOSSLContext(configuration: tls),
            timeout: configuration.timeout,
            connections: configuration.connections,
            maximumInFlight: configuration.maximumInFlight
        )
        self.logger = logger
        self.now = now
    }

    /// Encrypts `payload` for `subscription` and sends it; what the answer means.
    public func send(_ payload: [UInt8], to subscription: WebPushSubscription, options: Options) async -> WebPushOutcome {
        await send([Message(payload: payload, subscription: subscription, options: options)])[0].outcome
    }

    /// Encrypts and sends the messages, each push service's share over its own connections; returns
    /// what each answer means and how long its request took (zero when none was answered), in order.
    /// What has not been sent by `deadline` is not sent (`.unreachable`): the caller's claim on it may
    /// be lapsing.
    public func send(_ messages: [Message], deadline: ContinuousClock.Instant? = nil) async -> [(outcome: WebPushOutcome, elapsed: Duration)] {
        var results = [(outcome: WebPushOutcome, elapsed: Duration)](repeating: (.unreachable(reason: "not sent"), .zero), count: messages.count)
        var byOrigin: [String: [Sealed]] = [:]
        for (index, sealed) in await Self.seal(messages).enumerated() {
            switch sealed {
            case .body(let body):
                byOrigin[messages[index].subscription.origin, default: []].append(Sealed(index: index, message: messages[index], body: body))
            case .refused(let outcome):
                results[index] = (outcome, .zero)
            }
        }
        if let deadline, ContinuousClock.now >= deadline {
            for share in byOrigin.values {
                for sealed in share { results[sealed.index] = (Self.notSent, .zero) }
            }
            return results
        }
        await withTaskGroup(of: [(Int, (outcome: WebPushOutcome, elapsed: Duration))].self) { group in
            for (origin, share) in byOrigin {
                group.addTask { await self.send(share, origin: origin, deadline: deadline) }
            }
            for await answered in group {
                for (index, result) in answered { results[index] = result }
            }
        }
        return results
    }

    /// Closes the connections to the push services (the HTTP/1.1 client belongs to the caller).
    public func shutdown() async {
        await connections.shutdown()
    }

    static let notSent = WebPushOutcome.unreachable(reason: "not sent: the batch's time ran out")

    /// Each message's encrypted body, or the outcome that refuses it before sending (too large: 413;
    /// keys that cannot be used: 400), as the push service would. Spread over the cores: the key
    /// agreement is most of a push's cost.
    private static func seal(_ messages: [Message]) async -> [Encrypted] {
        let chunk = 32
        var sealed = [Encrypted](repeating: .refused(.rejected(status: 400)), count: messages.count)
        await withTaskGroup(of: (Int, [Encrypted]).self) { group in
            for start in stride(from: 0, to: messages.count, by: chunk) {
                let part = messages[start..<min(start + chunk, messages.count)]
                group.addTask {
                    let bodies = part.map { message -> Encrypted in
                        do {
                            return .body(
                                try WebPushPayload.encrypt(message.payload, p256dh: message.subscription.p256dh, auth: message.subscription.auth)
                            )
                        } catch {
                            return .refused(.rejected(status: error as? WebPushPayload.Failure == .tooLarge ? 413 : 400))
                        }
                    }
                    return (start, bodies)
                }
            }
            for await (start, bodies) in group {
                sealed.replaceSubrange(start..<(start + bodies.count), with: bodies)
            }
        }
        return sealed
    }

    /// One push service's share: over HTTP/2, or through AsyncHTTPClient for a service that does not
    /// speak it (what the HTTP/2 pool learns on its first connection: nothing has been sent then).
    private func send(
        _ share: [Sealed],
        origin: String,
        deadline: ContinuousClock.Instant?
    ) async -> [(Int, (outcome: WebPushOutcome, elapsed: Duration))] {
        let (route, idle) = connections.route(to: share[0].message.subscription)
        for pool in idle { await pool.shutdown() }
        guard case .http2(let pool) = route else { return await sendHTTP1(share, deadline: deadline) }
        let authorization = authorization(for: origin)
        let answers = await pool.send(share.map { request(for: $0, authority: pool.authority, authorization: authorization) })
        var results: [(Int, (outcome: WebPushOutcome, elapsed: Duration))] = []
        var refused: [Sealed] = []
        for (sealed, answer) in zip(share, answers) {
            switch answer {
            case .success(let answer):
                results.append((sealed.index, (WebPushOutcome(status: answer.status, retryAfter: answer.retryAfter), answer.elapsed)))
            case .failure(.notHTTP2):
                refused.append(sealed)
            case .failure(let error):
                logger.notice("a push service could not be reached", metadata: ["origin": "\(origin)", "error": "\(error)"])
                results.append((sealed.index, (.unreachable(reason: "\(error)"), .zero)))
            }
        }
        if !refused.isEmpty {
            logger.info("a push service does not speak HTTP/2; sending to it over HTTP/1.1", metadata: ["origin": "\(origin)"])
            await connections.useHTTP1(for: origin)?.shutdown()
            results += await sendHTTP1(refused, deadline: deadline)
        }
        return results
    }

    /// The HTTP/2 request for one message. The values were checked when the subscription was
    /// registered (its URL), or are made here (the token, the options' digits and base64url topic).
    private func request(for sealed: Sealed, authority: String, authorization: String) -> HTTP2Request {
        let options = sealed.message.options
        var headers = HPACKHeaders()
        headers.reserveCapacity(11)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        // Different for every subscription: kept out of HPACK's dynamic table, as are the length and
        // the topic, so that what repeats (the token) stays in it.
        headers.add(name: ":path", value: sealed.message.subscription.requestTarget, indexing: .nonIndexable)
        headers.add(name: ":authority", value: authority)
        headers.add(name: "authorization", value: authorization)
        headers.add(name: "ttl", value: String(max(0, options.timeToLive)))
        headers.add(name: "urgency", value: options.urgency.rawValue)
        if let topic = options.topic { headers.add(name: "topic", value: topic, indexing: .nonIndexable) }
        headers.add(name: "content-encoding", value: "aes128gcm")
        headers.add(name: "content-type", value: "application/octet-stream")
        headers.add(name: "content-length", value: String(sealed.body.count), indexing: .nonIndexable)
        return HTTP2Request(headers: headers, body: ByteBuffer(bytes: sealed.body))
    }

    /// Messages to a push service without HTTP/2, through AsyncHTTPClient, `maximumInFlight` at once.
    private func sendHTTP1(_ share: [Sealed], deadline: ContinuousClock.Instant?) async -> [(Int, (outcome: WebPushOutcome, elapsed: Duration))] {
        await withTaskGroup(of: (Int, (outcome: WebPushOutcome, elapsed: Duration)).self) { group in
            var results: [(Int, (outcome: WebPushOutcome, elapsed: Duration))] = []
            var pending = share[...]
            func startNext() {
                guard let sealed = pending.popFirst() else { return }
                group.addTask {
                    if let deadline, ContinuousClock.now >= deadline { return (sealed.index, (Self.notSent, .zero)) }
                    return (sealed.index, await self.sendHTTP1(sealed))
                }
            }
            for _ in 0..<configuration.maximumInFlight { startNext() }
            for await result in group {
                results.append(result)
                startNext()
            }
            return results
        }
    }

    private func sendHTTP1(_ sealed: Sealed) async -> (outcome: WebPushOutcome, elapsed: Duration) {
        let (subscription, options) = (sealed.message.subscription, sealed.message.options)
        var request = HTTPClientRequest(url: subscription.endpoint.absoluteString)
        request.method = .POST
        request.headers.add(name: "Authorization", value: authorization(for: subscription.origin))
        request.headers.add(name: "TTL", value: String(max(0, options.timeToLive)))
        request.headers.add(name: "Urgency", value: options.urgency.rawValue)
        if let topic = options.topic { request.headers.add(name: "Topic", value: topic) }
        request.headers.add(name: "Content-Encoding", value: "aes128gcm")
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .bytes(ByteBuffer(bytes: sealed.body))
        let start = ContinuousClock.now
        do {
            let response = try await http.execute(request, timeout: .init(configuration.timeout))
            _ = try await response.body.collect(upTo: 64 * 1024)
            return (WebPushOutcome(status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After")), .now - start)
        } catch {
            logger.notice("a push service could not be reached", metadata: ["origin": "\(subscription.origin)", "error": "\(error)"])
            return (.unreachable(reason: "\(error)"), .zero)
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
