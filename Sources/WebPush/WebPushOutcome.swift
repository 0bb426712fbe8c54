import Foundation

/// What a push service's answer to one message means for its subscription and the server's key.
public enum WebPushOutcome: Sendable, Equatable {
    /// Accepted (201, or any 2xx).
    case delivered
    /// The subscription is gone (404, 410): it is removed, as a 410 removes an APNs device.
    case gone(status: Int)
    /// Try again later (429, 5xx); `retryAfter` from the answer's `Retry-After` when it gave one.
    case retry(status: Int, retryAfter: Duration?)
    /// The push service refuses the server's VAPID key for this subscription (401, 403): a
    /// credential failure, listed; other subscriptions keep receiving.
    case credentialRejected(status: Int)
    /// The message itself was refused (400, 413 payload too large, …): not retried.
    case rejected(status: Int)
    /// No answer: the service could not be reached or did not answer in time, or the message was not
    /// sent before its batch's deadline. Tried again later.
    case unreachable(reason: String)

    public init(status: Int, retryAfter: String?) {
        let wait = retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.map { Duration.seconds(max(0, $0)) }
        switch status {
        case 200..<300: self = .delivered
        case 404, 410: self = .gone(status: status)
        case 429, 500...: self = .retry(status: status, retryAfter: wait)
        case 401, 403: self = .credentialRejected(status: status)
        default: self = .rejected(status: status)
        }
    }
}
