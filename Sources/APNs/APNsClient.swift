import Atomics
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// How a client proves it may push: a provider token signed with a `.p8` key, or a TLS client
/// certificate from a `.p12`.
public enum APNsAuthentication: Sendable {
    case token(ProviderTokenCache)
    case certificate(PKCS12Bundle)
}

/// Sends pushes to APNs over HTTP/2 + TLS.
///
/// HTTP/2, TLS, connection reuse, stream limits and reconnecting are AsyncHTTPClient's: it negotiates
/// `h2` by ALPN, keeps one long-lived connection per host, runs at most as many concurrent streams as
/// the server's `SETTINGS_MAX_CONCURRENT_STREAMS` allows (queuing the rest), opens a new connection
/// after GOAWAY or a failure, and bounds every request by the deadline given here. This type adds what
/// is APNs's own: the headers, the provider token, the payload limit and the reading of answers.
///
/// One client serves one credential: APNs binds a connection to the team of the first token it sees,
/// so credentials never share connections.
public final class APNsClient: Sendable {
    public struct Configuration: Sendable {
        /// `https://api.push.apple.com` or `https://api.sandbox.push.apple.com`, or a local server in tests.
        public var baseURL: String
        /// PEM files of extra trust roots (a test server's self-signed certificate).
        public var additionalTrustRootFiles: [String]
        /// Every request's time limit, connecting included.
        public var timeout: Duration
        /// HTTP/2 connections, used in turn. One connection's streams are handled on one event loop
        /// thread; Apple allows several connections per provider for throughput.
        public var connections: Int

        public init(baseURL: String, additionalTrustRootFiles: [String] = [], timeout: Duration = .seconds(10), connections: Int = 2) {
            precondition(connections > 0)
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
    /// One client per connection: AsyncHTTPClient keeps one HTTP/2 connection per host and client.
    private let clients: [HTTPClient]
    private let next = ManagedAtomic<Int>(0)
    private let logger: Logger

    public init(configuration: Configuration, authentication: APNsAuthentication, logger: Logger = Logger(label: "herald.apns")) throws {
        self.configuration = configuration
        self.authentication = authentication
        self.logger = logger
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = configuration.additionalTrustRootFiles.map { .file($0) }
        if case .certificate(let bundle) = authentication {
            tls.certificateChain = [.certificate(try NIOSSLCertificate(bytes: bundle.certificateDER, format: .der))]
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: bundle.privateKeyDER, format: .der))
        }
        var http = HTTPClient.Configuration(tlsConfiguration: tls)
        http.httpVersion = .automatic
        // One long-lived connection, as Apple asks; AsyncHTTPClient reconnects when it goes away. The
        // limit matters while the first connection negotiates HTTP/2: with several opened at once for
        // a burst, requests beyond their streams were seen to stall until their deadline.
        http.connectionPool = .init(idleTimeout: .hours(1), concurrentHTTP1ConnectionsPerHostSoftLimit: 1)
        http.timeout = .init(connect: .seconds(10))
        self.clients = (0..<configuration.connections).map { _ in HTTPClient(eventLoopGroupProvider: .singleton, configuration: http) }
    }

    /// Sends one push and reads the answer; never throws — failures are results to act on.
    public func send(_ push: APNsPush) async -> APNsResult {
        guard push.payload.count <= APNsPush.maximumPayloadBytes else {
            return APNsResult(outcome: .permanent, status: nil, reason: "PayloadTooLarge (\(push.payload.count) bytes, checked before sending)")
        }
        var request = HTTPClientRequest(url: configuration.baseURL + "/3/device/" + push.deviceToken)
        request.method = .POST
        var generation: Int?
        if case .token(let cache) = authentication {
            let token = cache.current()
            generation = token.generation
            request.headers.add(name: "authorization", value: "bearer " + token.value)
        }
        request.headers.add(name: "apns-push-type", value: push.pushType)
        request.headers.add(name: "apns-priority", value: String(push.priority))
        request.headers.add(name: "apns-topic", value: push.topic)
        request.headers.add(name: "apns-expiration", value: String(push.expiration))
        if let collapseID = push.collapseID { request.headers.add(name: "apns-collapse-id", value: collapseID) }
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: push.payload))
        do {
            let http = clients[next.loadThenWrappingIncrement(ordering: .relaxed) % clients.count]
            let response = try await http.execute(request, deadline: .now() + .nanoseconds(configuration.timeout.nanoseconds))
            let body = try await response.body.collect(upTo: 64 * 1024)
            var reason: String?
            var timestamp: Int64?
            if body.readableBytes > 0, let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] {
                reason = object["reason"] as? String
                timestamp = (object["timestamp"] as? NSNumber)?.int64Value
            }
            let result = APNsResult.classify(status: Int(response.status.code), reason: reason, timestamp: timestamp)
            if result.outcome == .providerTokenRejected, case .token(let cache) = authentication, let generation {
                cache.invalidate(generation: generation)
            }
            return result
        } catch {
            // No answer: the connection failed, went away (GOAWAY) before this stream was processed, or
            // the deadline passed. All are worth retrying on a new connection.
            return APNsResult(outcome: .transient, status: nil, reason: Self.describe(error))
        }
    }

    /// Closes the connections.
    public func shutdown() async {
        for http in clients { try? await http.shutdown() }
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError {
            if error == .deadlineExceeded { return "timeout: no answer before the deadline" }
            return "connection: \(error)"
        }
        return "connection: \(error)"
    }
}

extension Duration {
    fileprivate var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}
