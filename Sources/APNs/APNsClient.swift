import Foundation
import Logging
import NIOCore
import NIOHPACK
import NIOSSL
import Synchronization

/// How a client proves it may push: a provider token signed with a `.p8` key, or a TLS client
/// certificate from a `.p12`.
public enum APNsAuthentication: Sendable {
    case token(ProviderTokenCache)
    case certificate(PKCS12Bundle)
}

/// Sends pushes to APNs over HTTP/2 + TLS.
///
/// TLS is NIOSSL's and HTTP/2 is swift-nio-http2's; this type keeps a few long-lived connections
/// (`Configuration.connections`, used in turn), replaces one that went away (GOAWAY, a drop) on the next
/// push, and after a failed connect waits with exponential backoff before trying again. Each push is
/// one stream bounded by the configured deadline; streams beyond the server's
/// `SETTINGS_MAX_CONCURRENT_STREAMS` (or `Configuration.maximumInFlight`) wait in the client for
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
    private let tls: NIOSSLContext
    private let host: String
    private let port: Int
    /// `:authority`: the host, with the port unless it is 443.
    private let authority: String
    private let slots: [ConnectionSlot]
    private let next = Atomic<Int>(0)
    private let logger: Logger

    public init(configuration: Configuration, authentication: APNsAuthentication, logger: Logger = Logger(label: "herald.apns")) throws {
        self.configuration = configuration
        self.authentication = authentication
        self.logger = logger
        guard let url = URL(string: configuration.baseURL), url.scheme == "https", let host = url.host else {
            throw APNsCredentialError.invalidKey("the APNs URL must be https://host[:port], got '\(configuration.baseURL)'")
        }
        self.host = host
        let port = url.port ?? 443
        self.port = port
        self.authority = port == 443 ? host : "\(host):\(port)"
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        // APNs requires TLS 1.2 or newer; refuse anything older rather than let a server negotiate down.
        tls.minimumTLSVersion = .tlsv12
        tls.additionalTrustRoots = configuration.additionalTrustRootFiles.map { .file($0) }
        if case .certificate(let bundle) = authentication {
            tls.certificateChain = [.certificate(try NIOSSLCertificate(bytes: bundle.certificateDER, format: .der))]
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: bundle.privateKeyDER, format: .der))
        }
        self.tls = try NIOSSLContext(configuration: tls)
        self.slots = (0..<configuration.connections).map { _ in ConnectionSlot() }
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
        var sendable: [(index: Int, request: APNsRequest)] = []
        sendable.reserveCapacity(pushes.count)
        for (index, push) in pushes.enumerated() {
            guard push.payload.count <= APNsPush.maximumPayloadBytes else {
                let reason = "PayloadTooLarge (\(push.payload.count) bytes, checked before sending)"
                outcomes[index] = (APNsResult(outcome: .permanent, status: nil, reason: reason), .zero)
                continue
            }
            sendable.append((index, request(for: push, authorization: authorization)))
        }
        // Contiguous shares, one per connection; a lone push goes to the connections in turn.
        let first = next.wrappingAdd(1, ordering: .relaxed).oldValue
        let shares = min(slots.count, sendable.count)
        let answered = await withTaskGroup(of: [(Int, Result<APNsAnswer, APNsConnectionError>)].self) { group in
            for share in 0..<shares {
                let part = Array(sendable[(sendable.count * share / shares)..<(sendable.count * (share + 1) / shares)])
                let slot = slots[(first + share) % slots.count]
                group.addTask { [host, port, tls, configuration] in
                    // Requests that never left (the connection failed or retired while they waited for
                    // a stream) go once more, on the new connection the slot makes.
                    var pending = part
                    var answered: [(Int, Result<APNsAnswer, APNsConnectionError>)] = []
                    for attempt in 0..<2 {
                        do {
                            let connection = try await slot.connection {
                                try await APNsConnection.connect(
                                    host: host,
                                    port: port,
                                    tls: tls,
                                    timeout: configuration.timeout,
                                    maximumInFlight: configuration.maximumInFlight,
                                    connected: configuration.connected
                                )
                            }
                            var unsent: [(index: Int, request: APNsRequest)] = []
                            for (item, result) in zip(pending, await connection.send(pending.map(\.request))) {
                                if case .failure(.notSent) = result, attempt == 0 {
                                    unsent.append(item)
                                } else {
                                    answered.append((item.index, result))
                                }
                            }
                            pending = unsent
                        } catch {
                            answered += pending.map { ($0.index, .failure(.failed("\(error)"))) }
                            pending = []
                        }
                        if pending.isEmpty { break }
                    }
                    return answered
                }
            }
            var all: [(Int, Result<APNsAnswer, APNsConnectionError>)] = []
            for await part in group { all += part }
            return all
        }
        var tokenRejected = false
        for (index, outcome) in answered {
            switch outcome {
            case .success(let answer):
                let result = Self.classify(answer)
                tokenRejected = tokenRejected || result.outcome == .providerTokenRejected
                outcomes[index] = (result, answer.elapsed)
            case .failure(.timeout):
                outcomes[index] = (APNsResult(outcome: .transient, status: nil, reason: "\(APNsConnectionError.timeout)"), .zero)
            case .failure(let error):
                // No answer: the connection failed, or went away (GOAWAY) before this stream was
                // processed. Worth retrying — on a new connection, which the slot makes.
                outcomes[index] = (APNsResult(outcome: .transient, status: nil, reason: "connection: \(error)"), .zero)
            }
        }
        if tokenRejected, case .token(let cache) = authentication, let generation {
            cache.invalidate(generation: generation)
        }
        return outcomes.map { $0! }
    }

    private func request(for push: APNsPush, authorization: String?) -> APNsRequest {
        // Values that differ from push to push (the device's path, the user's collapse id, the
        // length) stay out of HPACK's dynamic table: indexed, each would evict entries every push
        // repeats — the ~250-byte provider token above all — which would then go out in full again.
        var headers = HPACKHeaders()
        headers.reserveCapacity(12)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":path", value: "/3/device/" + push.deviceToken, indexing: .nonIndexable)
        headers.add(name: ":authority", value: authority)
        if let authorization { headers.add(name: "authorization", value: authorization) }
        headers.add(name: "apns-push-type", value: push.pushType)
        headers.add(name: "apns-priority", value: String(push.priority))
        headers.add(name: "apns-topic", value: push.topic)
        headers.add(name: "apns-expiration", value: String(push.expiration))
        if let collapseID = push.collapseID { headers.add(name: "apns-collapse-id", value: collapseID, indexing: .nonIndexable) }
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: String(push.payload.count), indexing: .nonIndexable)
        return APNsRequest(headers: headers, body: ByteBuffer(bytes: push.payload))
    }

    private static func classify(_ answer: APNsAnswer) -> APNsResult {
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
        for slot in slots { await slot.close() }
    }
}

/// One connection of a client: made on first use, replaced when it is gone, with backoff after a
/// failed connect so a down server is not hammered.
private final class ConnectionSlot: Sendable {
    private struct State {
        var connection: APNsConnection?
        var connecting: Task<APNsConnection, any Error>?
        var failures = 0
        var retryAfter: ContinuousClock.Instant?
    }

    private enum Lease {
        case ready(APNsConnection)
        case connecting(Task<APNsConnection, any Error>)
    }

    private let state = Mutex(State())

    func connection(_ connect: @escaping @Sendable () async throws -> APNsConnection) async throws -> APNsConnection {
        let lease = try state.withLock { state -> Lease in
            if let connection = state.connection, connection.isUsable { return .ready(connection) }
            if let connecting = state.connecting { return .connecting(connecting) }
            if let retryAfter = state.retryAfter, ContinuousClock.now < retryAfter {
                throw ReconnectBackoff()
            }
            let task = Task { try await connect() }
            state.connecting = task
            return .connecting(task)
        }
        let task: Task<APNsConnection, any Error>
        switch lease {
        case .ready(let connection): return connection
        case .connecting(let connecting): task = connecting
        }
        do {
            let connection = try await task.value
            state.withLock { state in
                if state.connection !== connection {
                    state.connection = connection
                    state.connecting = nil
                    state.failures = 0
                    state.retryAfter = nil
                }
            }
            return connection
        } catch let error as ReconnectBackoff {
            throw error
        } catch {
            state.withLock { state in
                if state.connecting != nil {
                    state.connecting = nil
                    state.failures += 1
                    // 100 ms doubling, at most 30 s.
                    state.retryAfter = .now + .milliseconds(min(30_000, 100 << min(state.failures - 1, 9)))
                }
            }
            throw error
        }
    }

    func close() async {
        let connection = state.withLock { state -> APNsConnection? in
            defer {
                state.connection = nil
                state.connecting?.cancel()
                state.connecting = nil
            }
            return state.connection
        }
        await connection?.close()
    }
}

private struct ReconnectBackoff: Error, CustomStringConvertible {
    var description: String { "waiting before reconnecting after a failed connection" }
}
