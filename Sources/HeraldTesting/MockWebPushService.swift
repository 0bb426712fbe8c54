import Foundation
import HeraldCrypto
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import WebPush

/// A real HTTP/2 + TLS push service (RFC 8030) for tests, holding its subscriptions' private keys as
/// a browser does.
///
/// `subscribe` makes a subscription bound to an application server's key, as `pushManager.subscribe`
/// does. A push (`POST /push/<id>`) is checked as a push service checks it — the VAPID token signed by
/// that key for this origin and not expiring more than a day ahead, `TTL`, `Content-Encoding:
/// aes128gcm`, `Urgency`, `Topic` — and its body is **decrypted** with the subscription's key; a body
/// that does not decrypt is refused. Answers can be scripted per subscription. Every push is recorded
/// with its plaintext.
public final class MockWebPushService: Sendable {
    /// A subscription as the browser holds it: what the page gives the server, and its private half.
    public struct Subscription: Sendable {
        public var id: String
        /// What the browser gives the application server (`PushSubscription.toJSON()`).
        public var endpoint: String
        public var p256dh: String
        public var auth: String
        let key: P256Key
        let authSecret: [UInt8]
        let applicationServerKey: [UInt8]
    }

    /// A push as the service received it.
    public struct Push: Sendable {
        public var subscription: String
        public var headers: [String: String]
        /// The decrypted payload; `nil` when the push was refused before or at decryption.
        public var plaintext: [UInt8]?
        public var status: Int
        public var receivedAt: Date
        /// Whether it came over HTTP/2 (or HTTP/1.1).
        public var overHTTP2: Bool

        /// The decrypted payload as a JSON object.
        public var object: [String: Any] {
            plaintext.flatMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] } ?? [:]
        }
    }

    private struct State {
        var subscriptions: [String: Subscription] = [:]
        var scripts: [String: [(status: Int, retryAfter: Int?)]] = [:]
        var pushes: [Push] = []
        var gone: Set<String> = []
    }

    private let state: NIOLockedValueBox<State>
    private let service: MockHTTPSService

    public var port: Int { service.port }
    public var origin: String { "https://127.0.0.1:\(port)" }
    /// The certificate clients must trust.
    public var trustRootFile: String { service.trustRootFile }

    private init(state: NIOLockedValueBox<State>, service: MockHTTPSService) {
        self.state = state
        self.service = service
    }

    /// A push service on a loopback port; `http1Only` makes one that does not speak HTTP/2, as some do
    /// not.
    public static func start(
        credentials: TestCredentials = .shared,
        http1Only: Bool = false,
        now: @escaping @Sendable () -> Date = Date.init
    ) async throws -> MockWebPushService {
        let state = NIOLockedValueBox(State())
        let origin = NIOLockedValueBox("")
        let router = Router(context: PushServiceContext.self)
        router.post("push/:id") { request, context -> Response in
            let id = context.parameters.get("id") ?? ""
            let body = Array(buffer: try await request.body.collect(upTo: 64 * 1024))
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            func answer(_ status: Int, plaintext: [UInt8]? = nil, retryAfter: Int? = nil) -> Response {
                state.withLockedValue {
                    $0.pushes.append(
                        Push(
                            subscription: id,
                            headers: headers,
                            plaintext: plaintext,
                            status: status,
                            receivedAt: Date(),
                            overHTTP2: context.overHTTP2
                        )
                    )
                }
                var response = Response(status: .init(code: status))
                if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
                return response
            }
            guard let subscription = state.withLockedValue({ $0.subscriptions[id] }) else { return answer(404) }
            if state.withLockedValue({ $0.gone.contains(id) }) { return answer(410) }
            guard let authorization = headers["authorization"],
                let vapid = VAPID.verify(authorization, audience: origin.withLockedValue { $0 }, now: now())
            else { return answer(401) }
            // A subscription takes pushes signed by the key it was made with only.
            guard vapid.publicKey == subscription.applicationServerKey else { return answer(403) }
            guard let ttl = headers["ttl"].flatMap(Int.init), ttl >= 0, headers["content-encoding"] == "aes128gcm",
                ["very-low", "low", "normal", "high"].contains(headers["urgency"] ?? "normal"),
                headers["topic"].map({ $0.count <= 32 && Base64URL.decode($0) != nil }) ?? true
            else { return answer(400) }
            guard body.count <= 4096 else { return answer(413) }
            guard let plaintext = try? WebPushPayload.decrypt(body, receiver: subscription.key, auth: subscription.authSecret) else {
                return answer(400)
            }
            let scripted = state.withLockedValue { state in state.scripts[id]?.isEmpty == false ? state.scripts[id]!.removeFirst() : nil }
            if let scripted { return answer(scripted.status, plaintext: plaintext, retryAfter: scripted.retryAfter) }
            return answer(201, plaintext: plaintext)
        }
        let service = try await MockHTTPSService.start(router, label: "mock.webpush", credentials: credentials, http1Only: http1Only)
        origin.withLockedValue { $0 = "https://127.0.0.1:\(service.port)" }
        return MockWebPushService(state: state, service: service)
    }

    /// A new subscription for the application server whose VAPID public key is `applicationServerKey`
    /// (an uncompressed point).
    public func subscribe(applicationServerKey: [UInt8]) -> Subscription {
        let (key, auth) = (P256Key(), SecureRandom.bytes(16))
        let id = SecureRandom.hexToken(byteCount: 8)
        let subscription = Subscription(
            id: id,
            endpoint: "\(origin)/push/\(id)",
            p256dh: Base64URL.encode(key.publicPoint),
            auth: Base64URL.encode(auth),
            key: key,
            authSecret: auth,
            applicationServerKey: applicationServerKey
        )
        state.withLockedValue { $0.subscriptions[id] = subscription }
        return subscription
    }

    /// The subscription is gone (the user revoked permission): its pushes get 410 from now on.
    public func unsubscribe(_ subscription: Subscription) {
        state.withLockedValue { _ = $0.gone.insert(subscription.id) }
    }

    /// The statuses to answer the next pushes to `subscription` with (after decrypting them), in
    /// order; then 201.
    public func script(_ subscription: Subscription, _ answers: [(status: Int, retryAfter: Int?)]) {
        state.withLockedValue { $0.scripts[subscription.id] = answers }
    }

    public var pushes: [Push] { state.withLockedValue { $0.pushes } }

    public func shutdown() async {
        await service.shutdown()
    }
}

/// A request's context that knows which HTTP version carried it.
struct PushServiceContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// An HTTP/2 request has a stream's channel, a child of its connection's, itself a child of the
    /// listening socket's; an HTTP/1.1 request has the connection's channel.
    let overHTTP2: Bool

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        overHTTP2 = source.channel.parent?.parent != nil
    }
}
