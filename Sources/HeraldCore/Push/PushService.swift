/// The push service that wakes a device: Apple's (iPhones, iPads, Macs), Firebase Cloud Messaging
/// (Android), or a browser's Web Push service.
public enum PushService: String, Sendable, CaseIterable, Hashable {
    case apns
    case fcm
    case webpush

    /// How people name it (logs, reasons, the console).
    public var displayName: String {
        switch self {
        case .apns: "APNs"
        case .fcm: "FCM"
        case .webpush: "Web Push"
        }
    }
}
