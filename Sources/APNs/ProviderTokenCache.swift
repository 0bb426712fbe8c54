import Foundation
import HeraldCrypto
import Synchronization

/// One provider token (JWT) per signing key, shared by every connection and request, made again only
/// when it is `refreshAfter` old or APNs refused it.
///
/// APNs refuses tokens older than an hour and answers 429 when a connection sees a new token more than
/// once every 20 minutes, so minting one per request — a common bug — fails quickly. Creation is
/// single-flight: it happens under the lock (signing takes microseconds), so concurrent requests
/// that find the token stale make one new token, not one each.
public final class ProviderTokenCache: Sendable {
    public struct Token: Sendable, Equatable {
        public var value: String
        public var issuedAt: Int64
        /// Increases with every new token; a refusal invalidates only the generation it was sent with.
        public var generation: Int
    }

    private let key: P256Key
    private let keyID: String
    private let teamID: String
    private let refreshAfter: Int64
    private let now: @Sendable () -> Date
    private let state = Mutex<Token?>(nil)

    /// `refreshAfter` must lie within APNs's window of 20 to 60 minutes; the default is 50.
    public init(
        key: P256Key,
        keyID: String,
        teamID: String,
        refreshAfter: Duration = .seconds(50 * 60),
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        precondition(refreshAfter >= .seconds(20 * 60) && refreshAfter <= .seconds(60 * 60), "APNs wants tokens refreshed after 20 to 60 minutes")
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.refreshAfter = refreshAfter.components.seconds
        self.now = now
    }

    /// The token to send now.
    public func current() -> Token {
        state.withLock { token in
            let seconds = Int64(now().timeIntervalSince1970)
            if let existing = token, seconds - existing.issuedAt < refreshAfter { return existing }
            let fresh = Token(
                value: APNsJWT.make(key: key, keyID: keyID, teamID: teamID, issuedAt: seconds),
                issuedAt: seconds,
                generation: (token?.generation ?? 0) + 1
            )
            token = fresh
            return fresh
        }
    }

    /// APNs refused the token of `generation`: the next `current()` makes a new one. Later refusals of
    /// the same generation (other requests in flight) change nothing.
    public func invalidate(generation: Int) {
        state.withLock { token in
            if token?.generation == generation {
                token = Token(value: "", issuedAt: .min / 2, generation: generation)
            }
        }
    }
}
