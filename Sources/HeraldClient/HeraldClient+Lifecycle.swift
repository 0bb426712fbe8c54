extension HeraldClient {
    /// Follows the app's life through `platform`: in the foreground the live stream is open and
    /// every collection refreshes (with or without a stream); in the background the stream closes
    /// (within the time the system grants) and silent pushes take over; when the network comes back
    /// the stream reconnects at once, not after its backoff, and everything refreshes. The app icon's
    /// badge follows the server's. Calling it again replaces the platform (its reports stop);
    /// `stopFollowingLifecycle()` ends it.
    public func followLifecycle(of platform: any HeraldPlatform) {
        self.platform?.stop()
        self.platform = platform
        platform.start { [weak self] event in self?.handle(event) }
        platform.setBadge(unread.total)
        if platform.isActive { handle(.didBecomeActive) }
    }

    /// Stops following the app's life (the stream stays as it is).
    public func stopFollowingLifecycle() {
        platform?.stop()
        platform = nil
    }

    /// Reacts to one platform event.
    func handle(_ event: PlatformEvent) {
        log(.debug, "platform: \(event)")
        switch event {
        case .didBecomeActive:
            connect()
            guard userID != nil else { return }
            startBackgroundRefresh("foreground") { try await self.refreshAllInBackground() }
        case .didEnterBackground:
            wantsStream = false
            guard stream != nil else { return }
            let closing: @MainActor () async -> Void = { [weak self] in
                // Back in the foreground before this ran (a quick flip): the stream is wanted again,
                // so it stays. A flip while `disconnect` waits opens a new stream, which that
                // `disconnect` no longer touches.
                guard let self, !self.wantsStream else { return }
                await self.disconnect()
            }
            if let platform { platform.withBackgroundTime("Herald: closing the live stream", closing) } else { Task { await closing() } }
        case .network(let available):
            let returned = available && !networkAvailable
            networkAvailable = available
            guard returned, userID != nil else { return }
            if wantsStream, connectionState != .connected { startStream() }
            startBackgroundRefresh("network returned") { try await self.refreshAllInBackground() }
        }
    }
}
