import Foundation

/// What FCM's answer to one message means for its device and its credential.
public enum FCMOutcome: Sendable, Equatable {
    case delivered
    /// The registration token is no longer valid (`UNREGISTERED`, or `INVALID_ARGUMENT` about the
    /// token): the device goes, as a 410 makes an APNs device go.
    case unregistered(reason: String)
    /// Try again later: `QUOTA_EXCEEDED`, `UNAVAILABLE`, `INTERNAL` and other 5xx; `retryAfter` from
    /// the answer's `Retry-After` when it gave one.
    case retry(reason: String, retryAfter: Duration?)
    /// The credential does not work for this project or device (`SENDER_ID_MISMATCH`,
    /// `THIRD_PARTY_AUTH_ERROR`, `PERMISSION_DENIED`, or an access token refused twice): listed as a
    /// failure of the credential; other credentials keep sending.
    case credentialRejected(reason: String)
    /// The message itself was refused (`INVALID_ARGUMENT` about anything but the token): not retried.
    case rejected(reason: String)

    /// The outcome of an answer with `status`, its JSON `body` and its `Retry-After` header.
    public init(status: Int, body: [UInt8], retryAfter: String?) {
        if (200..<300).contains(status) {
            self = .delivered
            return
        }
        let error = (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["error"] as? [String: Any]
        let details = error?["details"] as? [[String: Any]] ?? []
        let code = details.lazy.compactMap { $0["errorCode"] as? String }.first ?? (error?["status"] as? String) ?? "HTTP \(status)"
        let aboutToken = details.contains { detail in
            (detail["fieldViolations"] as? [[String: Any]])?.contains { ($0["field"] as? String) == "message.token" } == true
        }
        let wait = retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.map { Duration.seconds(max(0, $0)) }
        switch code {
        case "UNREGISTERED": self = .unregistered(reason: code)
        case "INVALID_ARGUMENT" where aboutToken: self = .unregistered(reason: "INVALID_ARGUMENT (message.token)")
        case "SENDER_ID_MISMATCH", "THIRD_PARTY_AUTH_ERROR", "PERMISSION_DENIED": self = .credentialRejected(reason: code)
        case "UNAUTHENTICATED": self = .credentialRejected(reason: code)
        case "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL": self = .retry(reason: code, retryAfter: wait)
        default: self = status == 429 || status >= 500 ? .retry(reason: code, retryAfter: wait) : .rejected(reason: code)
        }
    }
}
