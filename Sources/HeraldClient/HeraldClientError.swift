import Foundation

/// Why a call to the server failed: every error the library throws is one of these.
public enum HeraldClientError: Error, Sendable, Equatable {
    /// The server refused the request: its HTTP status and Herald's error `code` and `message`
    /// (`{"error":{"code","message"}}`).
    case server(status: Int, code: String, message: String)
    /// A rate limit is spent (`429`): try again after `retryAfter` (the answer's `Retry-After`). The
    /// library's own background refreshes wait it out by themselves.
    case rateLimited(retryAfter: Duration)
    /// The session token was refused, and the app's token provider (asked once) gave none that works.
    case unauthorized
    /// No user is signed in (`HeraldClient.signIn(userID:sessionToken:)`).
    case signedOut
    /// The request did not reach the server or its answer did not come back: `code` is the
    /// `URLError.Code`'s raw value (`NSURLErrorNotConnectedToInternet`, …) when there is one.
    case transport(code: Int, description: String)
    /// The server's answer could not be read (a server of another version, a proxy's page).
    case decoding(String)
    /// The request did not complete within its deadline.
    case timedOut

    /// Whether trying again later may succeed without anything else changing (the network, the
    /// server's limits, a deadline), as opposed to a refusal that will stand.
    public var isTransient: Bool {
        switch self {
        case .transport, .rateLimited, .timedOut: return true
        case .server(let status, _, _): return status >= 500
        case .unauthorized, .signedOut, .decoding: return false
        }
    }

    /// The library's error for whatever a request threw: itself, a `URLError`, a `DecodingError`.
    /// Cancellation stays what it is.
    static func from(_ error: any Error) -> any Error {
        switch error {
        case let error as HeraldClientError: return error
        case is CancellationError: return error
        case let error as URLError:
            if error.code == .cancelled { return CancellationError() }
            return HeraldClientError.transport(code: error.code.rawValue, description: error.localizedDescription)
        case let error as DecodingError: return HeraldClientError.decoding(String(describing: error))
        default: return HeraldClientError.transport(code: 0, description: String(describing: error))
        }
    }
}
