import Foundation

extension HeraldClient {
    /// Signs `userID` in with the session your backend issued (`POST /v1/users/{id}/sessions`): opens
    /// that user's cache (its last state shows at once), registers the APNs token the app handed
    /// over, if any, and opens the live stream if the app wants it open. Signing in as someone else
    /// while a user is signed in switches users, keeping the first one's cache for their return; to
    /// forget them, `signOut()` first.
    public func signIn(userID: String, sessionToken: String) async {
        if self.userID == userID {
            await updateSessionToken(sessionToken)
            return
        }
        if self.userID != nil { await endSession(deletingCache: false) }
        account += 1
        let account = self.account
        self.userID = userID
        await api.credentials.replace(sessionToken)
        cache = openCache(for: userID)
        channels.client = self
        if let cache, let saved = await cache.loadMeta(), account == self.account {
            deviceToken = saved.deviceToken
            if let unread = saved.unread { self.unread = unread }
            if let list = saved.channelList { channels.restore(list) }
        }
        log(.info, "signed in")
        if let registration = apnsRegistration, registration.token != deviceToken {
            do {
                try await register(registration)
            } catch {
                log(.warning, "registering the device at sign-in failed: \(error)")
            }
        }
        if wantsStream, account == self.account { startStream() }
    }

    /// Signs the user out: unregisters this device for them (no more pushes of theirs reach it),
    /// closes the stream, forgets every collection, the channel list and the counts, and deletes
    /// their cache. The APNs token stays with the client for whoever signs in next.
    public func signOut() async {
        guard userID != nil else { return }
        if let token = deviceToken {
            do {
                try await api.unregisterDevice(token: token)
            } catch {
                log(.warning, "unregistering the device at sign-out failed: \(error)")
            }
        }
        await endSession(deletingCache: true)
    }

    /// Hands the client a new session token for the signed-in user (your backend renewed it): the
    /// next request carries it, and a stream that had failed on the old one opens again.
    public func updateSessionToken(_ token: String) async {
        guard userID != nil else { return }
        await api.credentials.replace(token)
        if case .failed = connectionState, wantsStream, stream == nil {
            startStream()
        }
    }

    /// Ends the signed-in user's session on this client (see `signOut()`).
    private func endSession(deletingCache: Bool) async {
        let wanted = wantsStream
        await disconnect()
        wantsStream = wanted
        // Whatever is still in flight for this user finds the account changed and applies nothing.
        account += 1
        for refresh in backgroundRefreshes.values { await refresh.value }
        for collection in collections.values { collection.detach() }
        collections = [:]
        channels.clear()
        unreadPositions = [:]
        unread = UnreadCounts()
        deviceToken = nil
        await api.credentials.replace(nil)
        let closing = cache
        cache = nil
        if let closing {
            await closing.close()
            if deletingCache, let userID, let url = configuration.cacheURL(for: userID) { HeraldCache.delete(at: url) }
        }
        log(.info, deletingCache ? "signed out" : "switched users")
        userID = nil
    }

    /// The user's cache, or none (with a warning) when it cannot be opened: the cache is a copy, and
    /// the app must start without it rather than not at all.
    private func openCache(for userID: String) -> HeraldCache? {
        guard let url = configuration.cacheURL(for: userID) else { return nil }
        do {
            return try HeraldCache(url: url)
        } catch {
            log(.warning, "the cache could not be opened; going on without one: \(error)")
            return nil
        }
    }
}
