import Foundation
import HeraldCore
import Hummingbird
import Metrics

/// The rate limits of Herald's API: per session and per client address on user routes (the live
/// stream's upgrade included), and on failed authentications per address on every authenticated
/// route. A request past a limit gets `429 rate_limited` with `Retry-After`, before any database work,
/// and counts in `herald_rate_limited_total{limit}`. Admin routes are limited only by failed
/// authentications: the admin token is one caller, trusted, and guessing it is what the limit stops.
///
/// A refusal is held back for up to `holdRefusals` (one second) before it goes out: a client that
/// honours `Retry-After` waits longer than that anyway, and one that ignores it gets one answer a
/// second per connection instead of as many as the server can write — answering a flood of refusals
/// as fast as it comes would still take the CPU other users' requests need.
public struct RequestLimits: Sendable {
    /// The limits; `nil` turns one off.
    public struct Settings: Sendable, Equatable {
        /// `HERALD_RATE_LIMIT_SESSION`: requests of one session.
        public var session: RateLimit? = RateLimit(perSecond: 20, burst: 100)
        /// `HERALD_RATE_LIMIT_ADDRESS`: user-route requests from one address (behind a reverse proxy,
        /// every client has the proxy's address: raise it or turn it off there).
        public var address: RateLimit? = RateLimit(perSecond: 200, burst: 1_000)
        /// `HERALD_RATE_LIMIT_AUTH_FAILURES`: requests refused for their credentials (401) from one
        /// address; past it, the address is refused before its credentials are looked at.
        public var failedAuthentication: RateLimit? = RateLimit(perSecond: 1, burst: 30)
        /// How long a refusal is held back (never longer than its `Retry-After`, a whole number of
        /// seconds: at least one).
        public var holdRefusals: Duration = .seconds(1)

        public init() {}

        /// No limits at all (tests that are not about them, benchmarks).
        public static let off: Settings = {
            var settings = Settings()
            settings.session = nil
            settings.address = nil
            settings.failedAuthentication = nil
            return settings
        }()
    }

    private let session: RateLimiter<[UInt8]>?
    private let address: RateLimiter<String>?
    private let failedAuthentication: RateLimiter<String>?
    private let holdRefusals: Duration

    public init(_ settings: Settings, clock: @escaping @Sendable () -> Double = RequestLimits.monotonicSeconds) {
        holdRefusals = settings.holdRefusals
        session = settings.session.map { RateLimiter($0, clock: clock) }
        address = settings.address.map { RateLimiter($0, clock: clock) }
        failedAuthentication = settings.failedAuthentication.map { RateLimiter($0, clock: clock) }
    }

    /// Seconds on the monotonic clock.
    @Sendable public static func monotonicSeconds() -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private static let start = ContinuousClock.now

    var isOff: Bool {
        session == nil && address == nil && failedAuthentication == nil
    }

    /// Before a user route looks at its credentials: the address's and the session's limits, and the
    /// address's failed authentications. `bearer` is the presented token, if any.
    func admitUser(address remote: String?, bearer: String?) async throws {
        if let remote {
            if let wait = address?.take(remote) { throw await refusal("address", wait) }
            if let wait = failedAuthentication?.check(remote) { throw await refusal("failed_authentication", wait) }
        }
        if let session, let bearer, let token = SessionToken(parsing: bearer), let wait = session.take(token.hash) {
            throw await refusal("session", wait)
        }
    }

    /// Before an admin route looks at its credentials: the address's failed authentications.
    func admitAdmin(address remote: String?) async throws {
        if let remote, let wait = failedAuthentication?.check(remote) { throw await refusal("failed_authentication", wait) }
    }

    /// The request from `address` was refused for its credentials.
    func authenticationFailed(address remote: String?) {
        if let remote { _ = failedAuthentication?.take(remote) }
    }

    /// The 429 for `limit`, once it has been held back (see the type).
    private func refusal(_ limit: String, _ wait: Double) async -> APIError {
        Counter(label: "herald_rate_limited_total", dimensions: [("limit", limit)]).increment()
        let seconds = max(1, Int(wait.rounded(.up)))
        // Cancelled (the client went away): the answer goes nowhere, so there is nothing to wait for.
        try? await Task.sleep(for: min(holdRefusals, .seconds(seconds)))
        var error = APIError(
            .tooManyRequests,
            code: "rate_limited",
            message: "Too many requests (\(limit.replacingOccurrences(of: "_", with: " ")) limit); retry after \(seconds) s."
        )
        error.retryAfter = seconds
        return error
    }
}
