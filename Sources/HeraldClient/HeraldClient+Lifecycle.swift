#if canImport(UIKit)
import UIKit

extension HeraldClient {
    /// Opens the live stream whenever the app becomes active and closes it when the app goes to the
    /// background (where silent pushes take over), and opens it now if the app is active. Call once,
    /// after creating the client.
    public func connectWhileActive() {
        let center = NotificationCenter.default
        _ = center.addObserver(forName: UIApplication.didBecomeActiveNotification, object: nil, queue: .main) { [weak self] _ in
            MainActor.assumeIsolated { self?.connect() }
        }
        _ = center.addObserver(forName: UIApplication.didEnterBackgroundNotification, object: nil, queue: .main) { [weak self] _ in
            MainActor.assumeIsolated {
                guard let self else { return }
                Task { await self.disconnect() }
            }
        }
        if UIApplication.shared.applicationState == .active { connect() }
    }
}
#endif
