import Foundation
import HTTP2Streams
import Logging
import NIOCore
import NIOHPACK
import NIOSSL

/// How a client proves it may push: a provider token signed with a `.p8` key, or a TLS client
/// certificate from a `.p12`.
public enum APNsAuthentication: Sendable {
    case token(ProviderTokenCache)
    case certificate(PKCS12Bundle)
}

/// Sends pushes to APNs over HTTP/2 + TLS.
///
/// TLS is NIOSSL's and HTTP/2 is swift-nio-http2's, driven at the frame level by an
/// `HTTP2ConnectionPool`: a few long-lived connections (`Configuration.connections`, used in turn),
/// replaced when they go away. Each push is one stream bounded by the configured deadline; streams
/// beyond the server's `SETTINGS_MAX_CONCURRENT_STREAMS` (or `Configuration.maximumInFlight`) wait for
/// others to finish. What is APNs's own: the headers, the provider token, the payload limit and the
/// reading of answers. A batch (`send(_:)` with many pushes) costs one hop to each connection's event
/// loop, not a task per push.
///
/// (The first version used AsyncHTTPClient, which flushed each request's head, body and end apart —
/// three TLS writes per push; the second a stream channel per push; see docs/decisions/2026-11-22-apns-client-on-swift-nio-http2.md.)
///
/// One client serves one credential: APNs binds a connection to the team of the first token it sees,
/// so credentials never share connections.
public final class APNsClient: Sendable {
    public struct Configuration: Sendable {
        /// `https://api.push.apple.com` or `https://api.sandbox.push.apple.com`, or a local server in tests.
        public var baseURL: String
        /// PEM files of extra trust roots (a test server's self-signed certificate).
        public var additionalTrustRootFiles: [String]
        /// The time limit of connecting, and of every request from when its batch is handed to the
        /// connection (waiting for a free stream included) to the answer.
        public var timeout: Duration
        /// HTTP/2 connections, used in turn. A connection's streams are handled on one event loop
        /// thread; Apple allows several connections per provider for throughput.
        public var connections: Int
        /// Streams open at once per connection, at most; fewer when the server's
        /// `SETTINGS_MAX_CONCURRENT_STREAMS` says so. Pushes beyond it wait in the client (within
        /// their deadline).
        public var maximumInFlight: Int
        /// Runs on each new connection once it is connected, before any push is sent on it (tests:
        /// the moment a descheduled caller would leave between connecting and using the connection).
        var connected: (@Sendable (any Channel) async throws -> Void)?

        public init(
            baseURL: String,
            additionalTrustRootFiles: [String] = [],
            timeout: Duration = .seconds(10),
            connections: Int = 2,
            maximumInFlight: Int = 1_000
        ) {
            precondition(connections > 0 && maximumInFlight > 0)
            self.maximumInFlight = maximumInFlight
            self.baseURL = baseURL
            self.additionalTrustRootFiles = additionalTrustRootFiles
            self.timeout = timeout
            self.connections = connections
        }
    }

    public static let productionURL = "https://api.push.apple.com"
    public static let sandboxURL = "https://api.sandbox.push.apple.com"

    public let configuration: Configuration
    private let authentication: APNsAuthentication
    private let pool: HTTP2ConnectionPool
    private let logger: Logger

    public init(configuration: Configuration, authentication: APNsAuthentication, logger: Logger = Logger(label: "herald.apns")) throws {
        self.configuration = configuration
        self.authentication = authentication
        self.logger = logger
        guard let url = URL(string: configuration.baseURL), url.scheme == "https", let host = url.host else {
            throw APNsCredentialError.invalidKey("the APNs URL must be https://host[:port], got '\(configuration.baseURL)'")
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        // APNs requires TLS 1.2 or newer; refuse anything older rather than let a server negotiate down.
        tls.minimumTLSVersion = .tlsv12
        tls.additionalTrustRoots = configuration.additionalTrustRootFiles.map { .file($0) }
        if case .certificate(let bundle) = authentication {
            tls.certificateChain = [.certificate(try NIOSSLCertificate(bytes: bundle.certificateDER, format: .der))]
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: bundle.privateKeyDER, format: .der))
        }
        self.pool = HTTP2ConnectionPool(
            host: host,
            port: url.port ?? 443,
            tls: try NIOSSLContext(configuration: tls),
            timeout: configuration.timeout,
            connections: configuration.connections,
            maximumInFlight: configuration.maximumInFlight,
            connected: configuration.connected
        )
    }

    /// Sends one push and reads the answer; never throws — failures are results to act on.
    public func send(_ push: APNsPush) async -> APNsResult {
        await send([push])[0].result
    }

    /// Sends the pushes — spread over the connections, each share handed to its connection at once —
    /// and returns each one's result and how long its stream was open (zero when it never started), in
    /// order. Never throws: failures are results to act on.
    public func send(_ pushes: [APNsPush]) async -> [(result: APNsResult, elapsed: Duration)] {
        var outcomes = [(result: APNsResult, elapsed: Duration)?](repeating: nil, count: pushes.count)
        var generation: Int?
        var authorization: String?
        if case .token(let cache) = authentication {
            let token = cache.current()
            generation = token.generation
            authorization = "bearer " + token.value
        }
        var sendable: [(index: Int, request: HTTP2Request)] = []
        sendable.reserveCapacity(pushes.count)
        for (index, push) in pushes.enumerated() {
            guard push.payload.count <= APNsPush.maximumPayloadBytes else {
                let reason = "PayloadTooLarge (\(push.payload.count) bytes, checked before sending)"
                outcomes[index] = (APNsResult(outcome: .permanent, status: nil, reason: reason), .zero)
                continue
            }
            sendable.append((index, request(for: push, authorization: authorization)))
        }
        let answered = zip(sendable.map(\.index), await pool.send(sendable.map(\.request)))
        var tokenRejected = false
        for (index, outcome) in answered {
            switch outcome {
            case .success(let answer):
                let result = Self.classify(answer)
                tokenRejected = tokenRejected || result.outcome == .providerTokenRejected
                outcomes[index] = (result, answer.elapsed)
            case .failure(.timeout):
                outcomes[index] = (APNsResult(outcome: .transient, status: nil, reason: "\(HTTP2ConnectionError.timeout)"), .zero)
            case .failure(let error):
                // No answer: the connection failed, or went away (GOAWAY) before this stream was
                // processed. Worth retrying — on a new connection, which the pool makes.
                outcomes[index] = (APNsResult(outcome: .transient, status: nil, reason: "connection: \(error)"), .zero)
            }
        }
        if tokenRejected, case .token(let cache) = authentication, let generation {
            cache.invalidate(generation: generation)
        }
        return outcomes.map { $0! }
    }

    private func request(for push: APNsPush, authorization: String?) -> HTTP2Request {
        // Values that differ from push to push (the device's path, the user's collapse id, the
        // length) stay out of HPACK's dynamic table: indexed, each would evict entries every push
        // repeats — the ~250-byte provider token above all — which would then go out in full again.
        var headers = HPACKHeaders()
        headers.reserveCapacity(12)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":path", value: "/3/device/" + push.deviceToken, indexing: .nonIndexable)
        headers.add(name: ":authority", value: pool.authority)
        if let authorization { headers.add(name: "authorization", value: authorization) }
        headers.add(name: "apns-push-type", value: push.pushType)
        headers.add(name: "apns-priority", value: String(push.priority))
        headers.add(name: "apns-topic", value: push.topic)
        headers.add(name: "apns-expiration", value: String(push.expiration))
        if let collapseID = push.collapseID { headers.add(name: "apns-collapse-id", value: collapseID, indexing: .nonIndexable) }
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: String(push.payload.count), indexing: .nonIndexable)
        return HTTP2Request(headers: headers, body: ByteBuffer(bytes: push.payload))
    }

    private static func classify(_ answer: HTTP2Answer) -> APNsResult {
        var reason: String?
        var timestamp: Int64?
        if answer.body.readableBytes > 0,
            let object = try? JSONSerialization.jsonObject(with: Data(answer.body.readableBytesView)) as? [String: Any]
        {
            reason = object["reason"] as? String
            timestamp = (object["timestamp"] as? NSNumber)?.int64Value
        }
        return APNsResult.classify(status: answer.status, reason: reason, timestamp: timestamp)
    }

    /// Closes the connections.
    public func shutdown() async {
        await pool.shutdown()
    }
}
