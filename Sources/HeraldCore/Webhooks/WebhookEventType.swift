/// The events a webhook can ask for.
public enum WebhookEventType: String, Sendable, CaseIterable, Codable {
    /// A recipient's device reported the notification delivered.
    case notificationDelivered = "notification.delivered"
    /// A recipient read the notification.
    case notificationRead = "notification.read"
    /// A recipient clicked the notification.
    case notificationClicked = "notification.clicked"
    /// A recipient viewed the notification.
    case notificationViewed = "notification.viewed"
    /// A recipient pressed one of the notification's actions (buttons).
    case notificationAction = "notification.action"
    /// A throttle held a notification back from a recipient: its alert (`silence`) or its copy (`drop`).
    case notificationThrottled = "notification.throttled"
    /// A batched send folded into recipients' open digest: the digest changed in place.
    case notificationDigestUpdated = "notification.digest_updated"
    /// A push was refused for good or ran out of retries.
    case pushFailed = "push.failed"
    /// APNs said a device token is no longer valid; the device was removed.
    case deviceRemoved = "device.removed"
    /// A user's erasure finished: nothing of theirs remains.
    case userErased = "user.erased"
}
