public import Foundation

/// The APNs token the app handed over, and where it belongs.
struct APNsRegistration: Sendable, Equatable {
    var token: String
    var environment: APNsEnvironment
    var topic: String
}

extension HeraldClient {
    /// Registers this device's APNs token — the `Data` iOS hands to
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)` — so that the server pushes
    /// it. `environment` is `.sandbox` for development builds; `topic` is the app's bundle id. With
    /// nobody signed in the token is held and registered when someone signs in; it is kept for every
    /// later sign-in, and registered again if the server loses the device. From then on every sync
    /// names the device, which is what lets the server push it again.
    public func registerDevice(token: Data, environment: APNsEnvironment, topic: String) async throws {
        let registration = APNsRegistration(token: token.map { String(format: "%02x", $0) }.joined(), environment: environment, topic: topic)
        apnsRegistration = registration
        guard userID != nil else {
            log(.info, "the APNs token is held until someone signs in")
            return
        }
        try await register(registration)
    }

    /// Unregisters this device for the signed-in user (they turned notifications off): no more
    /// pushes, and the library does not register it again by itself.
    public func unregisterDevice() async throws {
        apnsRegistration = nil
        guard let token = deviceToken else { return }
        let account = self.account
        try await api.unregisterDevice(token: token)
        guard account == self.account else { return }
        deviceToken = nil
        await cache?.saveDeviceToken(nil)
    }

    func register(_ registration: APNsRegistration) async throws {
        let account = self.account
        try await api.registerDevice(token: registration.token, environment: registration.environment, topic: registration.topic, unique: false)
        guard account == self.account else { return }
        deviceToken = registration.token
        await cache?.saveDeviceToken(registration.token)
    }

    /// Runs a request that names this device (`Herald-Device`). When the server does not know the
    /// device (`device_not_found`: it removed it after APNs said the token is gone, or a backup was
    /// restored onto another phone), the name is dropped, the APNs token registered again if the app
    /// handed one over, the app told, and the request sent once more — naming the device again only
    /// if it is registered now.
    func namingDevice<T>(_ call: (String?) async throws -> T) async throws -> T {
        let device = deviceToken
        do {
            return try await call(device)
        } catch let error as HeraldClientError where device != nil && error.isDeviceNotFound {
            await deviceLost(device!)
            return try await call(deviceToken)
        }
    }

    /// The server lost the device `token`: one recovery, however many requests noticed.
    func deviceLost(_ token: String) async {
        if let reregistering {
            _ = await reregistering.value
            return
        }
        guard deviceToken == token else { return }
        // Taken before the first wait: every other request that meets `device_not_found` meanwhile
        // waits for this recovery instead of starting its own or going on without the device.
        deviceToken = nil
        let account = self.account
        let task = Task { @MainActor () -> Bool in
            await self.cache?.saveDeviceToken(nil)
            self.log(.warning, "the server does not know this device; registering it again")
            guard let registration = self.apnsRegistration else { return false }
            do {
                try await self.register(registration)
                return true
            } catch {
                self.log(.warning, "registering the device again failed: \(error)")
                return false
            }
        }
        reregistering = task
        let reregistered = await task.value
        reregistering = nil
        if account == self.account { tell(.deviceNotFound(reregistered: reregistered)) }
    }
}

extension HeraldClientError {
    /// The server's answer to a request naming a device it does not know.
    var isDeviceNotFound: Bool {
        if case .server(404, "device_not_found", _) = self { return true }
        return false
    }
}
