#if os(iOS)
import UIKit
import Network
import UserNotifications

/// The iOS platform: the app's state from UIKit's notifications, the network from `NWPathMonitor`,
/// the badge through `UNUserNotificationCenter`, background time from `UIApplication`.
///
/// ```swift
/// herald.followLifecycle(of: UIKitPlatform())
/// ```
///
/// Not for app extensions, which have no `UIApplication`.
@available(iOSApplicationExtension, unavailable)
@MainActor
public final class UIKitPlatform: HeraldPlatform {
    private var observers: [any NSObjectProtocol] = []
    private var monitor: NWPathMonitor?

    public init() {}

    public var isActive: Bool {
        UIApplication.shared.applicationState == .active
    }

    public func start(_ handler: @escaping @MainActor @Sendable (PlatformEvent) -> Void) {
        stop()
        let center = NotificationCenter.default
        observers = [
            center.addObserver(forName: UIApplication.didBecomeActiveNotification, object: nil, queue: .main) { _ in
                MainActor.assumeIsolated { handler(.didBecomeActive) }
            },
            center.addObserver(forName: UIApplication.didEnterBackgroundNotification, object: nil, queue: .main) { _ in
                MainActor.assumeIsolated { handler(.didEnterBackground) }
            },
        ]
        let monitor = NWPathMonitor()
        // Called on the main queue (`start(queue: .main)`): in order with the app's notifications,
        // and never after `stop()` cancelled the monitor.
        monitor.pathUpdateHandler = { path in
            let available = path.status == .satisfied
            MainActor.assumeIsolated { handler(.network(available: available)) }
        }
        monitor.start(queue: .main)
        self.monitor = monitor
    }

    public func stop() {
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
        observers = []
        monitor?.cancel()
        monitor = nil
    }

    public func setBadge(_ count: Int) {
        UNUserNotificationCenter.current().setBadgeCount(count)
    }

    public func withBackgroundTime(_ name: String, _ work: @escaping @MainActor () async -> Void) {
        let task = BackgroundTask()
        task.identifier = UIApplication.shared.beginBackgroundTask(withName: name) {
            // Out of time: iOS suspends the app now whatever is left; the assertion must end first.
            MainActor.assumeIsolated { task.end() }
        }
        Task { @MainActor in
            await work()
            task.end()
        }
    }
}

/// One background task assertion, ended once.
@available(iOSApplicationExtension, unavailable)
@MainActor
private final class BackgroundTask {
    var identifier = UIBackgroundTaskIdentifier.invalid

    func end() {
        guard identifier != .invalid else { return }
        UIApplication.shared.endBackgroundTask(identifier)
        identifier = .invalid
    }
}
#endif
