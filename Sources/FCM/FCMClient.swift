import AsyncHTTPClient
import Foundation
import HTTP2Streams
import HeraldCrypto
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHPACK
import NIOHTTP1
import NIOSSL
import Synchronization

/// Sends messages through FCM's HTTP v1 API for one service account.
///
/// Messages go over the frame-level HTTP/2 stack the APNs client uses (`HTTP2ConnectionPool`: a few
/// long-lived connections, two frames per message, a batch handed to each connection at once):
/// FCM is one host that takes many small requests, the case AsyncHTTPClient served at several times
/// the CPU per request (docs/benchmarks.md, "push services end to end"). The access token comes from the
/// account's token endpoint — one request an hour, through AsyncHTTPClient — in exchange for a
/// signed assertion; it is kept until five minutes before it expires, and fetched again once when FCM
/// refuses it (401).
public final class FCMClient: Sendable {
    public struct Configuration: Sendable {
        /// FCM's base URL (`HERALD_FCM_URL`); messages go to `<base>/v1/projects/<id>/messages:send`.
        public var baseURL: URL
        /// Every message's deadline, from when its batch is handed to a connection.
        public var timeout: Duration
        /// PEM files of extra trust roots (`HERALD_PUSH_CA_FILE`).
        public var additionalTrustRootFiles: [String]
        /// HTTP/2 connections to FCM, used in turn.
        public var connections: Int
        /// Messages in flight at once per connection, at most (fewer if FCM says so).
        public var maximumInFlight: Int

        public init(
            baseURL: URL = URL(string: "https://fcm.googleapis.com")!,
            timeout: Duration = .seconds(10),
            additionalTrustRootFiles: [String] = [],
            connections: Int = 2,
            maximumInFlight: Int = 100
        ) {
            self.baseURL = baseURL
            self.timeout = timeout
            self.additionalTrustRootFiles = additionalTrustRootFiles
            self.connections = connections
            self.maximumInFlight = maximumInFlight
        }
    }

    /// An access token and when it stops being used.
    struct AccessToken: Sendable {
        var value: String
        var renewAt: Date
    }

    private enum TokenState {
        case none
        case fetching(Task<AccessToken, any Error>)
        case ready(AccessToken)
        /// The token endpoint refused the account: not asked again until `until`.
        case refused(FCMOutcome, until: Date)
    }

    private enum Held {
        case token(AccessToken)
        case fetching(Task<AccessToken, any Error>)
        case refused(FCMOutcome)
    }

    /// The token endpoint refused the assertion, or could not be asked.
    struct TokenFailure: Error {
        var outcome: FCMOutcome
    }

    public let account: FCMServiceAccount
    let configuration: Configuration
    /// For the token endpoint.
    private let http: HTTPClient
    /// For the messages.
    private let pool: HTTP2ConnectionPool
    private let path: String
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let tokens = Mutex(TokenState.none)
    /// Renewed this long before the token endpoint's expiry.
    static let renewalMargin: TimeInterval = 300
    /// A refused account's sends fail this long without asking the token endpoint again.
    static let refusalPause: TimeInterval = 60

    /// A client for `account`, its messages to `configuration.baseURL` (HTTPS), its access tokens
    /// through `http`.
    public init(
        account: FCMServiceAccount,
        configuration: Configuration = Configuration(),
        http: HTTPClient,
        logger: Logger,
        now: @escaping @Sendable () -> Date = Date.init
    ) throws {
        guard configuration.baseURL.scheme == "https", let host = configuration.baseURL.host, !host.isEmpty else {
            throw FCMConfigurationError(message: "the FCM URL must be https://host[:port], got '\(configuration.baseURL)'")
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        tls.minimumTLSVersion = .tlsv12
        tls.additionalTrustRoots = configuration.additionalTrustRootFiles.map { .file($0) }
        self.account = account
        self.configuration = configuration
        self.http = http
        self.pool = HTTP2ConnectionPool(
            host: host,
            port: configuration.baseURL.port ?? 443,
            tls: try NIOSSLContext(configuration: tls),
            timeout: configuration.timeout,
            connections: configuration.connections,
            maximumInFlight: configuration.maximumInFlight
        )
        let base = configuration.baseURL.path.hasSuffix("/") ? String(configuration.baseURL.path.dropLast()) : configuration.baseURL.path
        self.path = base + "/v1/projects/\(account.projectID)/messages:send"
        self.logger = logger
        self.now = now
    }

    /// Sends `message`; what its answer means (network failures and timeouts are `.retry`).
    public func send(_ message: FCMMessage) async -> FCMOutcome {
        await send([message])[0].outcome
    }

    /// Sends the messages, a batch over the connections; returns what each answer means and how long
    /// its stream was open (zero when none was answered), in order. Network failures and timeouts are
    /// `.retry`. Messages FCM refuses with `UNAUTHENTICATED` are sent once more with a new token. What
    /// has not been sent by `deadline` is not sent (`.retry`): the caller's claim on it may be lapsing.
    public func send(_ messages: [FCMMessage], deadline: ContinuousClock.Instant? = nil) async -> [(outcome: FCMOutcome, elapsed: Duration)] {
        func notSent(_ count: Int) -> [(outcome: FCMOutcome, elapsed: Duration)] {
            Array(repeating: (.retry(reason: "not sent: the batch's time ran out", retryAfter: nil), .zero), count: count)
        }
        func failed(_ error: any Error, _ count: Int) -> [(outcome: FCMOutcome, elapsed: Duration)] {
            let outcome = (error as? TokenFailure)?.outcome ?? .retry(reason: "FCM could not be reached: \(error)", retryAfter: nil)
            return Array(repeating: (outcome, .zero), count: count)
        }
        let token: AccessToken
        do {
            token = try await accessToken()
        } catch {
            return failed(error, messages.count)
        }
        if let deadline, ContinuousClock.now >= deadline { return notSent(messages.count) }
        var results = await post(messages, token: token.value)
        let refused = results.indices.filter { index in
            if case .credentialRejected(let reason) = results[index].outcome, reason == "UNAUTHENTICATED" { return true }
            return false
        }
        guard !refused.isEmpty else { return results }
        // The token may have been revoked or expired early: one new token, one more try — for the
        // refused messages only; the others keep what FCM answered them.
        forget(token)
        let again: [(outcome: FCMOutcome, elapsed: Duration)]
        do {
            let renewed = try await accessToken()
            if let deadline, ContinuousClock.now >= deadline {
                again = notSent(refused.count)
            } else {
                again = await post(refused.map { messages[$0] }, token: renewed.value)
            }
        } catch {
            again = failed(error, refused.count)
        }
        for (index, result) in zip(refused, again) { results[index] = result }
        return results
    }

    private func post(_ messages: [FCMMessage], token: String) async -> [(outcome: FCMOutcome, elapsed: Duration)] {
        let authorization = "Bearer " + token
        let requests = messages.map { message in
            let body = message.body
            var headers = HPACKHeaders()
            headers.reserveCapacity(7)
            headers.add(name: ":method", value: "POST")
            headers.add(name: ":scheme", value: "https")
            headers.add(name: ":path", value: path)
            headers.add(name: ":authority", value: pool.authority)
            headers.add(name: "authorization", value: authorization)
            headers.add(name: "content-type", value: "application/json; charset=UTF-8")
            // Differs from message to message: kept out of HPACK's dynamic table (see APNsClient).
            headers.add(name: "content-length", value: String(body.count), indexing: .nonIndexable)
            return HTTP2Request(headers: headers, body: ByteBuffer(bytes: body))
        }
        return await pool.send(requests).map { result in
            switch result {
            case .success(let answer):
                return (FCMOutcome(status: answer.status, body: Array(answer.body.readableBytesView), retryAfter: answer.retryAfter), answer.elapsed)
            case .failure(let error):
                return (.retry(reason: "FCM could not be reached: \(error)", retryAfter: nil), .zero)
            }
        }
    }

    /// Closes the connections to FCM (the token endpoint's client belongs to the caller).
    public func shutdown() async {
        await pool.shutdown()
    }

    /// The access token in use, fetched when there is none or it is due for renewal; concurrent
    /// callers share one fetch.
    func accessToken() async throws -> AccessToken {
        let moment = now()
        let held = tokens.withLock { state -> Held in
            switch state {
            case .ready(let token) where token.renewAt > moment:
                return .token(token)
            case .fetching(let task):
                return .fetching(task)
            case .refused(let outcome, let until) where until > moment:
                return .refused(outcome)
            case .none, .ready, .refused:
                let task = Task { try await self.fetchToken() }
                state = .fetching(task)
                return .fetching(task)
            }
        }
        let task: Task<AccessToken, any Error>
        switch held {
        case .token(let token): return token
        case .fetching(let fetching): task = fetching
        case .refused(let outcome): throw TokenFailure(outcome: outcome)
        }
        do {
            let token = try await task.value
            // Only this fetch's own result is kept: a newer fetch may have started since.
            tokens.withLock { state in
                if case .fetching(let current) = state, current == task { state = .ready(token) }
            }
            return token
        } catch let failure as TokenFailure {
            tokens.withLock { state in
                guard case .fetching(let current) = state, current == task else { return }
                if case .credentialRejected = failure.outcome {
                    state = .refused(failure.outcome, until: now() + Self.refusalPause)
                } else {
                    state = .none
                }
            }
            throw failure
        } catch {
            tokens.withLock { state in
                if case .fetching(let current) = state, current == task { state = .none }
            }
            throw error
        }
    }

    private func forget(_ token: AccessToken) {
        tokens.withLock { state in
            if case .ready(let held) = state, held.value == token.value { state = .none }
        }
    }

    private func fetchToken() async throws -> AccessToken {
        let issuedAt = now()
        var request = HTTPClientRequest(url: account.tokenURI.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: FCMAssertion.tokenRequestBody(FCMAssertion.make(account, issuedAt: issuedAt))))
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await http.execute(request, timeout: .init(configuration.timeout))
            body = try await response.body.collect(upTo: 64 * 1024)
        } catch {
            throw TokenFailure(outcome: .retry(reason: "the token endpoint could not be reached: \(error)", retryAfter: nil))
        }
        let object = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
        // The token goes out in a header the frame-level client sends unchecked: visible ASCII only.
        guard response.status == .ok, let value = object?["access_token"] as? String, !value.isEmpty,
            value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }), let lifetime = object?["expires_in"] as? Int
        else {
            let reason = (object?["error_description"] as? String) ?? (object?["error"] as? String) ?? "HTTP \(response.status.code)"
            if response.status.code >= 500 || response.status.code == 429 {
                throw TokenFailure(outcome: .retry(reason: "the token endpoint: \(reason)", retryAfter: nil))
            }
            logger.warning("the FCM token endpoint refused the service account", metadata: ["reason": "\(reason)"])
            throw TokenFailure(outcome: .credentialRejected(reason: "the token endpoint refused the service account: \(reason)"))
        }
        return AccessToken(value: value, renewAt: issuedAt + max(0, TimeInterval(lifetime) - Self.renewalMargin))
    }
}

/// An FCM client's configuration that cannot work.
public struct FCMConfigurationError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
