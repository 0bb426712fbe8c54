import Foundation
import HeraldCore

/// How the push dispatcher behaves; the defaults are production's, tests shorten the waits.
public struct PushSettings: Sendable {
    /// Which offline devices of a user get a push (`HERALD_PUSH_MULTI_DEVICE`).
    public var multiDevice: MultiDevicePolicy = .allOffline
    /// The least time between two refresh pushes to one device (`HERALD_REFRESH_MIN_INTERVAL`).
    public var minimumInterval: Duration = .seconds(60)
    /// `apns-expiration` is set this far ahead (`HERALD_PUSH_EXPIRATION`).
    public var expiration: Duration = .seconds(3600)
    /// `HERALD_APNS_URL`: one URL for both environments instead of Apple's (tests).
    public var apnsURL: String?
    /// `HERALD_APNS_CA_FILE`: extra trust roots for the APNs connection.
    public var apnsCAFile: String?
    /// `HERALD_FCM_URL`: FCM's base URL instead of Google's (tests, a proxy).
    public var fcmURL: URL?
    /// `HERALD_PUSH_CA_FILE`: extra trust roots for FCM and the Web Push services.
    public var pushCAFile: String?
    /// `HERALD_VAPID_SUBJECT`: the operator's contact in every VAPID token (`mailto:` or `https:`),
    /// which push services use to reach whoever runs a misbehaving server. Without one, pushes to
    /// browsers fail with that reason (Apple's push service refuses tokens without a real contact).
    public var vapidSubject: String?
    /// Devices claimed per round. Smaller batches left the machine idle between them while the
    /// dispatcher waited on the database (docs/decisions/2026-11-25-push-end-to-end-through-a-server.md).
    public var batchSize = 2_000
    /// Pushes in flight at once on one APNs connection (fewer if the server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` says so), as many on each of an FCM credential's two connections,
    /// and in the Web Push lane.
    public var concurrency = 300
    /// A claim lapses after this long; another dispatcher then takes the device over.
    public var lease: Duration = .seconds(60)
    /// Attempts before a retryable failure becomes a dead letter.
    public var maximumAttempts = 5
    /// The first retry's delay; each next one doubles (with jitter), up to `maximumRetryDelay`.
    public var retryDelay: Duration = .seconds(2)
    public var maximumRetryDelay: Duration = .seconds(15 * 60)
    /// The first backoff after a 429 for a device token; doubles per attempt.
    public var throttleDelay: Duration = .seconds(60)
    /// How often to look for work when no wake-up arrives (other replicas, lapsed claims, retries).
    public var pollInterval: Duration = .seconds(1)
    /// Alert pushes: `herald.app_id` (`HERALD_APP_ID`), whether `aps.badge` is set
    /// (`HERALD_PUSH_BADGE`) and its cap (`HERALD_PUSH_BADGE_CAP`), and the text shown for
    /// notifications sent with `no_detail` (`HERALD_PUSH_NO_DETAIL_TEXT`).
    public var appID = "herald"
    public var badge = true
    public var badgeCap: Int?
    public var noDetailText = "You have a new notification"
    /// Whether the logging transport (no credentials stored) logs each push's payload, not only its
    /// type and size (`HERALD_PUSH_LOG_PAYLOADS`): payloads carry what users are told.
    public var logPayloads = false
    /// Every push request's deadline.
    public var requestTimeout: Duration = .seconds(10)

    /// How long the FCM or Web Push lane may spend on one batch: what has not started by then is not
    /// sent (and retried), so that no push goes out on a claim that may have lapsed — the next batch
    /// is claimed while this one is in flight, and both must finish within the lease.
    var batchDeadline: Duration { min(requestTimeout * 2, lease / 3) }

    public init() {}
}
