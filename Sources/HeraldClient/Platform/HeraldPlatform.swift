/// What the client hears from the system it runs on and asks of it: the app's state, the network,
/// the app icon's badge, and time to finish work in the background. On iOS the library's
/// `UIKitPlatform` is it (UIKit, Network, UserNotifications); elsewhere — and in tests — the app
/// provides one. The client's whole reaction to these events is its own code, the same everywhere.
@MainActor
public protocol HeraldPlatform: AnyObject {
    /// Whether the app is in the foreground now.
    var isActive: Bool { get }
    /// Starts calling `handler` with every change of the app's state and of the network's
    /// availability (the first report of the network may repeat what is known), until `stop()`.
    func start(_ handler: @escaping @MainActor @Sendable (PlatformEvent) -> Void)
    /// Stops every report `start` began: after it the handler is not called again.
    func stop()
    /// Sets the app icon's badge.
    func setBadge(_ count: Int)
    /// Runs `work` with the system's leave to finish it after the app left the foreground (closing
    /// the stream cleanly before iOS suspends the app).
    func withBackgroundTime(_ name: String, _ work: @escaping @MainActor () async -> Void)
}

/// A change the platform reports.
public enum PlatformEvent: Sendable, Equatable {
    /// The app came to the foreground.
    case didBecomeActive
    /// The app went to the background.
    case didEnterBackground
    /// The network became usable (`true`) or not (`false`).
    case network(available: Bool)
}
