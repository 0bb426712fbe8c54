public import Foundation

extension HeraldClient {
    /// Registers this device's APNs token — the `Data` iOS hands to
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)` — so that the server sends it
    /// silent refresh pushes. `environment` is `.sandbox` for development builds; `topic` is the app's
    /// bundle id. From then on every sync names the device, which is what lets the server push it again.
    public func registerDevice(token: Data, environment: APNsEnvironment, topic: String) async throws {
        let hex = token.map { String(format: "%02x", $0) }.joined()
        _ = try await api.registerDevice(token: hex, environment: environment, topic: topic, unique: false)
        deviceToken = hex
        await cache?.saveDeviceToken(hex)
    }

    /// Unregisters this device (on sign-out): it gets no more pushes for this user.
    public func unregisterDevice() async throws {
        guard let token = deviceToken else { return }
        try await api.unregisterDevice(token: token)
        deviceToken = nil
        await cache?.saveDeviceToken(nil)
    }
}
