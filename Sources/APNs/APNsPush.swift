/// One notification for one device, as APNs takes it.
public struct APNsPush: Sendable, Equatable {
    /// The device token, hex.
    public var deviceToken: String
    /// `apns-topic`: the app's bundle id.
    public var topic: String
    /// `apns-push-type`: `background` for silent refreshes, `alert` for visible ones.
    public var pushType: String
    /// `apns-priority`: 5 (power-considerate; required for background pushes) or 10.
    public var priority: Int
    /// `apns-expiration`: seconds since 1970 after which APNs stops trying; 0 means deliver now or never.
    public var expiration: Int64
    /// `apns-collapse-id`, at most 64 bytes.
    public var collapseID: String?
    /// The JSON payload.
    public var payload: [UInt8]

    /// APNs refuses larger payloads (413) for every push type Herald sends.
    public static let maximumPayloadBytes = 4096

    public init(deviceToken: String, topic: String, pushType: String, priority: Int, expiration: Int64, collapseID: String?, payload: [UInt8]) {
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.payload = payload
    }
}

/// What APNs (or the connection to it) answered, and what to do about it (Apple's "Handling
/// notification responses from APNs": the status codes and reasons, and which to retry).
public struct APNsResult: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// 200.
        case delivered
        /// The token is dead for this topic: remove it (for `Unregistered`, unless re-registered after
        /// `timestamp`). Never retried.
        case invalidToken
        /// The provider token was refused (`ExpiredProviderToken`, `InvalidProviderToken`): make a new one
        /// and retry.
        case providerTokenRejected
        /// 429 `TooManyRequests`: back off for this device token, then retry.
        case throttled
        /// Worth retrying with backoff: 5xx, `IdleTimeout`, connection failures, timeouts.
        case transient
        /// Never retried: fix the cause (payload, topic, credentials).
        case permanent
    }

    public var outcome: Outcome
    /// The HTTP status, or nil when no response arrived.
    public var status: Int?
    /// APNs's `reason`, or a description of the connection failure.
    public var reason: String?
    /// With 410: when APNs learned the token was no longer valid, milliseconds since 1970.
    public var timestamp: Int64?

    public init(outcome: Outcome, status: Int?, reason: String?, timestamp: Int64? = nil) {
        self.outcome = outcome
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
    }

    /// Classifies an APNs answer.
    public static func classify(status: Int, reason: String?, timestamp: Int64?) -> APNsResult {
        let outcome: Outcome
        switch (status, reason ?? "") {
        case (200, _): outcome = .delivered
        case (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"), (400, "TopicDisallowed"), (410, _):
            outcome = .invalidToken
        case (403, "ExpiredProviderToken"), (403, "InvalidProviderToken"): outcome = .providerTokenRejected
        case (429, "TooManyRequests"): outcome = .throttled
        case (429, _), (400, "IdleTimeout"), (500...599, _): outcome = .transient
        default: outcome = .permanent
        }
        return APNsResult(outcome: outcome, status: status, reason: reason, timestamp: timestamp)
    }
}
