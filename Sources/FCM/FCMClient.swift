import AsyncHTTPClient
import Foundation
import HeraldCrypto
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Synchronization

/// Sends messages through FCM's HTTP v1 API for one service account.
///
/// Requests go through AsyncHTTPClient, which speaks HTTP/2 to FCM (ALPN) and keeps its connections
/// for reuse: the simplest correct client for one host with a stream per message. It writes and
/// flushes each request's parts separately, which kept an APNs client on it far below its goal
/// (docs/decisions/2026-11-22-apns-client-on-asynchttpclient.md); the push benchmark decides whether
/// FCM moves onto the frame-level HTTP/2 stack APNs uses. The access token comes from the
/// account's token endpoint in exchange for a signed assertion; it is kept until five minutes before
/// it expires, and fetched again once when FCM refuses it (401).
public final class FCMClient: Sendable {
    public struct Configuration: Sendable {
        /// FCM's base URL (`HERALD_FCM_URL`); messages go to `<base>/v1/projects/<id>/messages:send`.
        public var baseURL: URL
        public var timeout: Duration

        public init(baseURL: URL = URL(string: "https://fcm.googleapis.com")!, timeout: Duration = .seconds(10)) {
            self.baseURL = baseURL
            self.timeout = timeout
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
    private let http: HTTPClient
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let tokens = Mutex(TokenState.none)
    /// Renewed this long before the token endpoint's expiry.
    static let renewalMargin: TimeInterval = 300
    /// A refused account's sends fail this long without asking the token endpoint again.
    static let refusalPause: TimeInterval = 60

    public init(
        account: FCMServiceAccount,
        configuration: Configuration = Configuration(),
        http: HTTPClient,
        logger: Logger,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.account = account
        self.configuration = configuration
        self.http = http
        self.logger = logger
        self.now = now
    }

    /// Sends `message`; what its answer means (network failures and timeouts are `.retry`).
    public func send(_ message: FCMMessage) async -> FCMOutcome {
        do {
            let token = try await accessToken()
            var outcome = try await post(message, token: token.value)
            if case .credentialRejected(let reason) = outcome, reason == "UNAUTHENTICATED" {
                // The token may have been revoked or expired early: one new token, one more try.
                forget(token)
                outcome = try await post(message, token: try await accessToken().value)
            }
            return outcome
        } catch let failure as TokenFailure {
            return failure.outcome
        } catch {
            return .retry(reason: "FCM could not be reached: \(error)", retryAfter: nil)
        }
    }

    private func post(_ message: FCMMessage, token: String) async throws -> FCMOutcome {
        let url = configuration.baseURL.appendingPathComponent("v1/projects/\(account.projectID)/messages:send")
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer " + token)
        request.headers.add(name: "Content-Type", value: "application/json; charset=UTF-8")
        request.body = .bytes(ByteBuffer(bytes: message.body))
        let response = try await http.execute(request, timeout: .init(configuration.timeout))
        let body = try await response.body.collect(upTo: 64 * 1024)
        return FCMOutcome(status: Int(response.status.code), body: Array(buffer: body), retryAfter: response.headers.first(name: "Retry-After"))
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
        guard response.status == .ok, let value = object?["access_token"] as? String, let lifetime = object?["expires_in"] as? Int else {
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
