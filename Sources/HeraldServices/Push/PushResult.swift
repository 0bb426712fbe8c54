import APNs
import FCM
import Foundation
import WebPush

/// What became of one push, in the dispatcher's terms: each service's answers (APNs, FCM, Web Push)
/// are sorted into these, and the dispatcher records them alike.
public struct PushResult: Sendable, Equatable {
    public enum Outcome: String, Sendable {
        /// The service took it.
        case delivered
        /// The device is gone (APNs 410 or a dead token, FCM `UNREGISTERED`, Web Push 404/410): it is
        /// removed, unless registered again after `goneSince`.
        case gone
        /// The client renewed a credential the service refused (an expired provider token): retried
        /// at once.
        case retryNow = "retry_now"
        /// The service asks for less (429, FCM `QUOTA_EXCEEDED`): retried after `retryAfter`, or a
        /// backoff from the throttle delay.
        case throttled
        /// Worth retrying (5xx, timeouts, connections): after `retryAfter`, or a backoff.
        case transient
        /// Never retried: the payload, the device's app or the credential must be fixed. Listed.
        case permanent
    }

    public var outcome: Outcome
    /// The service's HTTP status; `nil` when no answer arrived (or none was asked for).
    public var status: Int?
    /// Why, in the service's words or ours.
    public var reason: String?
    /// The service's `Retry-After`, when it gave one.
    public var retryAfter: Duration?
    /// With `gone`: when the service learned the device was gone, if it says.
    public var goneSince: Date?

    public init(_ outcome: Outcome, status: Int? = nil, reason: String? = nil, retryAfter: Duration? = nil, goneSince: Date? = nil) {
        self.outcome = outcome
        self.status = status
        self.reason = reason
        self.retryAfter = retryAfter
        self.goneSince = goneSince
    }

    /// An APNs answer.
    public init(_ result: APNsResult) {
        let outcome: Outcome =
            switch result.outcome {
            case .delivered: .delivered
            case .invalidToken: .gone
            case .providerTokenRejected: .retryNow
            case .throttled: .throttled
            case .transient: .transient
            case .permanent: .permanent
            }
        self.init(
            outcome,
            status: result.status,
            reason: result.reason,
            goneSince: result.timestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        )
    }

    /// An FCM answer, for a message sent with the credential `credential`.
    public init(_ outcome: FCMOutcome, credential: String) {
        switch outcome {
        case .delivered:
            self.init(.delivered, status: 200)
        case .unregistered(let reason):
            self.init(.gone, status: 404, reason: reason)
        case .retry(let reason, let retryAfter):
            self.init(reason == "QUOTA_EXCEEDED" ? .throttled : .transient, reason: reason, retryAfter: retryAfter)
        case .credentialRejected(let reason):
            self.init(.permanent, reason: "FCM credential '\(credential)': \(reason)")
        case .rejected(let reason):
            self.init(.permanent, reason: reason)
        }
    }

    /// A push service's answer to a Web Push message.
    public init(_ outcome: WebPushOutcome) {
        switch outcome {
        case .delivered:
            self.init(.delivered, status: 201)
        case .gone(let status):
            self.init(.gone, status: status, reason: "the subscription is gone")
        case .retry(let status, let retryAfter):
            self.init(status == 429 ? .throttled : .transient, status: status, retryAfter: retryAfter)
        case .unreachable(let reason):
            self.init(.transient, reason: reason)
        case .credentialRejected(let status):
            self.init(.permanent, status: status, reason: "the push service refused the VAPID key for this subscription")
        case .rejected(let status):
            self.init(.permanent, status: status, reason: status == 413 ? "the payload is too large" : "refused")
        }
    }
}
