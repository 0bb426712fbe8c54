import APNs
import Foundation
import HTTP2Streams
import HeraldCrypto
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// A real HTTP/2 + TLS server that behaves like APNs for tests, after pushy's `MockApnsServer`.
///
/// It checks what APNs checks — method, path, every `apns-*` header, the payload size, and either the
/// provider token (ES256 signature against the test key, `kid`, team, age) or a TLS client certificate —
/// and binds each connection to the first team it sees. Answers can be scripted per device token: any
/// status and reason (410 with a timestamp), a GOAWAY that ends the connection, or a stream that never
/// answers. Every request is recorded, accepted or not.
public final class MockAPNsServer: Sendable {
    /// What the mock does with a request that passed validation.
    public enum Answer: Sendable, Equatable {
        case status(Int, reason: String? = nil, timestamp: Int64? = nil)
        /// Answers 200, then resets the stream with NO_ERROR, as nginx does after answering a request
        /// whose body it did not read (RFC 9113 §8.1 allows it).
        case answeredThenReset
        /// Sends GOAWAY naming the stream before this one as the last processed, and closes the connection.
        case goAway
        /// Never answers the stream.
        case hang
    }

    /// A request as the mock received it.
    public struct Request: Sendable {
        public var connection: Int
        public var streamID: Int
        public var method: String
        public var path: String
        /// Header names lowercased.
        public var headers: [String: String]
        public var body: [UInt8]
        /// The device token from the path.
        public var deviceToken: String
        /// What the mock answered (`nil` for a GOAWAY or a hung stream).
        public var status: Int?
        public var reason: String?
    }

    public enum Authentication: Sendable {
        /// Provider tokens signed by this key, for this key id and team.
        case token(publicKeyPEM: String, keyID: String, teamID: String)
        /// TLS client certificates issued by (or equal to) the certificate in this PEM file.
        case certificate(trustedClientCertificateFile: String)
    }

    private struct State {
        var requests: [Request] = []
        var scripts: [String: [Answer]] = [:]
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var nextConnection = 0
    }

    public let port: Int
    /// The certificate clients must trust (the server's self-signed one).
    public let trustRootFile: String
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>
    private let authentication: Authentication
    private let verifier: P256PublicKey?
    private let now: @Sendable () -> Date

    public var baseURL: String { "https://127.0.0.1:\(port)" }

    /// How the mock presents itself in the TLS handshake; all but `standard` are for tests of a client
    /// that must refuse it.
    public enum Presentation: Sendable {
        /// Its certificate names 127.0.0.1; TLS 1.2 or newer.
        case standard
        /// A certificate for `apns.wrong.example` (its trust root is that certificate).
        case wrongHost
        /// At most TLS 1.1.
        case oldTLS
    }

    /// Starts on a free loopback port. `maxConcurrentStreams` is announced in SETTINGS; `now` is the
    /// clock that judges a provider token's age.
    public static func start(
        authentication: Authentication,
        credentials: TestCredentials = .shared,
        presentation: Presentation = .standard,
        maxConcurrentStreams: Int = 100,
        now: @escaping @Sendable () -> Date = Date.init
    ) async throws -> MockAPNsServer {
        let (certificateFile, keyFile) =
            presentation == .wrongHost
            ? (credentials.wrongHostCertificateFile, credentials.wrongHostKeyFile)
            : (credentials.serverCertificateFile, credentials.serverKeyFile)
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
        )
        tls.applicationProtocols = ["h2"]
        if presentation == .oldTLS {
            tls.minimumTLSVersion = .tlsv1
            tls.maximumTLSVersion = .tlsv11
        }
        if case .certificate(let file) = authentication {
            tls.certificateVerification = .noHostnameVerification
            tls.trustRoots = .file(file)
        }
        let context = try NIOSSLContext(configuration: tls)
        let state = NIOLockedValueBox(State())
        let box = NIOLockedValueBox<MockAPNsServer?>(nil)
        let settings =
            nioDefaultSettings.filter { $0.parameter != .maxConcurrentStreams }
            + [HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams)]
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let connection = state.withLockedValue { state -> Int in
                        state.nextConnection += 1
                        return state.nextConnection
                    }
                    let binding = ConnectionBinding()
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.addHandlers([
                        NIOHTTP2Handler(mode: .server, initialSettings: settings),
                        StreamsHandler(server: { box.withLockedValue { $0 } }, connection: connection, binding: binding),
                    ])
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let server = MockAPNsServer(
            port: channel.localAddress?.port ?? 0,
            trustRootFile: certificateFile,
            channel: channel,
            state: state,
            authentication: authentication,
            now: now
        )
        box.withLockedValue { $0 = server }
        return server
    }

    private init(
        port: Int,
        trustRootFile: String,
        channel: any Channel,
        state: NIOLockedValueBox<State>,
        authentication: Authentication,
        now: @escaping @Sendable () -> Date
    ) {
        self.port = port
        self.trustRootFile = trustRootFile
        self.channel = channel
        self.state = state
        self.authentication = authentication
        if case .token(let pem, _, _) = authentication { verifier = try? P256PublicKey(pem: pem) } else { verifier = nil }
        self.now = now
    }

    /// The next answers for a device token, used in order; after them (and for unscripted tokens), 200.
    public func script(_ token: String, _ answers: [Answer]) {
        state.withLockedValue { $0.scripts[token.lowercased(), default: []] += answers }
    }

    /// Every request so far, in arrival order.
    public var requests: [Request] { state.withLockedValue { $0.requests } }

    /// Returns once at least `count` requests have arrived.
    public func waitForRequests(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLockedValue { state -> Bool in
                if state.requests.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    public func shutdown() async {
        try? await channel.close()
    }

    // MARK: - Handling

    /// Validates a complete request and decides the answer; records it either way.
    fileprivate func handle(_ request: inout Request, binding: ConnectionBinding) -> Answer {
        let answer: Answer
        if let (status, reason) = validate(request, binding: binding) {
            answer = .status(status, reason: reason)
        } else {
            answer = state.withLockedValue { state in
                guard !state.scripts.isEmpty, var queue = state.scripts[request.deviceToken.lowercased()], !queue.isEmpty else {
                    return .status(200)
                }
                let next = queue.removeFirst()
                state.scripts[request.deviceToken.lowercased()] = queue
                return next
            }
        }
        switch answer {
        case .status(let status, let reason, _):
            request.status = status
            request.reason = reason
        case .answeredThenReset:
            request.status = 200
        case .goAway, .hang:
            break
        }
        let recorded = request
        let ready = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.requests.append(recorded)
            guard !state.waiters.isEmpty else { return [] }
            let count = state.requests.count
            let ready = state.waiters.filter { $0.count <= count }.map(\.continuation)
            state.waiters.removeAll { $0.count <= count }
            return ready
        }
        for continuation in ready { continuation.resume() }
        return answer
    }

    /// nil when APNs would accept the request; else its status and reason.
    private func validate(_ request: Request, binding: ConnectionBinding) -> (Int, String)? {
        guard request.method == "POST" else { return (405, "MethodNotAllowed") }
        guard request.path.hasPrefix("/3/device/") else { return (404, "BadPath") }
        let token = request.deviceToken
        guard !token.isEmpty else { return (400, "MissingDeviceToken") }
        guard token.count.isMultiple(of: 2), token.allSatisfy(\.isHexDigit) else { return (400, "BadDeviceToken") }
        let headers = request.headers
        guard let topic = headers["apns-topic"], !topic.isEmpty else { return (400, "MissingTopic") }
        let pushType = headers["apns-push-type"] ?? ""
        guard ["alert", "background", "voip", "complication", "fileprovider", "mdm", "liveactivity"].contains(pushType) else {
            return (400, "InvalidPushType")
        }
        guard let priority = headers["apns-priority"].flatMap(Int.init), [1, 5, 10].contains(priority) else { return (400, "BadPriority") }
        if pushType == "background", priority != 5 { return (400, "BadPriority") }
        if let expiration = headers["apns-expiration"], Int64(expiration) == nil { return (400, "BadExpirationDate") }
        if let collapse = headers["apns-collapse-id"], collapse.utf8.count > 64 { return (400, "BadCollapseId") }
        guard !request.body.isEmpty else { return (400, "PayloadEmpty") }
        guard request.body.count <= 4096 else { return (413, "PayloadTooLarge") }
        guard (try? JSONSerialization.jsonObject(with: Data(request.body))) is [String: Any] else { return (400, "BadPayload") }
        switch authentication {
        case .certificate:
            // The TLS handshake already required a trusted client certificate.
            if headers["authorization"] != nil { return (403, "InvalidProviderToken") }
        case .token(_, let keyID, let teamID):
            guard let authorization = headers["authorization"], authorization.hasPrefix("bearer ") else {
                return (403, "MissingProviderToken")
            }
            // A token this connection already verified is only checked for age (as APNs validates a
            // token once per connection, not per request).
            if let known = binding.verified(authorization) {
                return Int(now().timeIntervalSince1970) - known > 3600 ? (403, "ExpiredProviderToken") : nil
            }
            guard let token = JWT.parts(authorization.dropFirst("bearer ".count)),
                let header = try? JSONSerialization.jsonObject(with: Data(token.header)) as? [String: Any],
                let claims = try? JSONSerialization.jsonObject(with: Data(token.claims)) as? [String: Any],
                header["alg"] as? String == "ES256", header["kid"] as? String == keyID,
                let issuer = claims["iss"] as? String, issuer == teamID,
                let issuedAt = claims["iat"] as? Int,  // a number, never a string
                let verifier, verifier.isValidSignature(token.signature, for: token.signingInput)
            else { return (403, "InvalidProviderToken") }
            if Int(now().timeIntervalSince1970) - issuedAt > 3600 { return (403, "ExpiredProviderToken") }
            if !binding.bind(team: issuer) { return (403, "InvalidProviderToken") }
            binding.remember(authorization, issuedAt: issuedAt)
        }
        return nil
    }
}

/// The team a connection belongs to: the first one it sees, for good (APNs refuses a provider token of
/// another team on the same connection); and the
/// provider token it last verified, with its `iat`.
private final class ConnectionBinding: Sendable {
    private let team = NIOLockedValueBox<String?>(nil)
    private let lastToken = NIOLockedValueBox<(token: String, issuedAt: Int)?>(nil)

    func verified(_ token: String) -> Int? {
        lastToken.withLockedValue { $0?.token == token ? $0?.issuedAt : nil }
    }

    func remember(_ token: String, issuedAt: Int) {
        lastToken.withLockedValue { $0 = (token, issuedAt) }
    }

    func bind(team candidate: String) -> Bool {
        team.withLockedValue { team in
            if let team { return team == candidate }
            team = candidate
            return true
        }
    }
}

/// The streams of one connection, at the frame level (no stream channel per request: the mock must
/// keep up with the client in the push benchmark). Answers are flushed once per read burst.
private final class StreamsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct Partial {
        var headers: HPACKHeaders
        var body: [UInt8] = []
    }

    private let server: () -> MockAPNsServer?
    private let connection: Int
    private let binding: ConnectionBinding
    private var partial: [HTTP2StreamID: Partial] = [:]
    private var needsFlush = false
    private var window = HTTP2ConnectionWindow()

    init(server: @escaping () -> MockAPNsServer?, connection: Int, binding: ConnectionBinding) {
        self.server = server
        self.connection = connection
        self.binding = binding
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            partial[frame.streamID] = Partial(headers: headers.headers)
            if headers.endStream { respond(frame.streamID, context: context) }
        case .data(let data):
            window.received(data)
            if case .byteBuffer(let buffer) = data.data { partial[frame.streamID]?.body += buffer.readableBytesView }
            if data.endStream { respond(frame.streamID, context: context) }
        case .rstStream:
            partial[frame.streamID] = nil
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if window.writeUpdate(to: context) { needsFlush = true }
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    private func respond(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let request = partial.removeValue(forKey: streamID), let server = server() else { return }
        let path = request.headers.first(name: ":path") ?? ""
        var headers: [String: String] = [:]
        for (name, value, _) in request.headers where !name.hasPrefix(":") {
            if headers[name.lowercased()] == nil { headers[name.lowercased()] = value }
        }
        var recorded = MockAPNsServer.Request(
            connection: connection,
            streamID: Int(streamID),
            method: request.headers.first(name: ":method") ?? "",
            path: path,
            headers: headers,
            body: request.body,
            deviceToken: path.hasPrefix("/3/device/") ? String(path.dropFirst("/3/device/".count)) : "",
            status: nil,
            reason: nil
        )
        var answer = server.handle(&recorded, binding: binding)
        let reset = answer == .answeredThenReset
        if reset { answer = .status(200) }
        switch answer {
        case .status(let status, let reason, let timestamp):
            var response = HPACKHeaders()
            response.add(name: ":status", value: String(status))
            response.add(name: "apns-id", value: UUID().uuidString, indexing: .nonIndexable)
            var payload = ByteBuffer()
            if status != 200 {
                var object: [String: Any] = ["reason": reason ?? ""]
                if let timestamp { object["timestamp"] = timestamp }
                payload.writeBytes((try? JSONSerialization.data(withJSONObject: object)) ?? Data())
                response.add(name: "content-type", value: "application/json")
            }
            let hasBody = payload.readableBytes > 0
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: response, endStream: !hasBody)))),
                promise: nil
            )
            if hasBody {
                context.write(
                    wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(payload), endStream: true)))),
                    promise: nil
                )
            }
            if reset { context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.noError))), promise: nil) }
            needsFlush = true
        case .goAway:
            let last = HTTP2StreamID(max(0, Int(streamID) - 2))
            let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: last, errorCode: .noError, opaqueData: nil))
            context.writeAndFlush(wrapOutboundOut(frame)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        case .hang, .answeredThenReset:
            break
        }
    }
}
