import Foundation

extension HeraldClient {
    /// Signs `userID` in with the session your backend issued (`POST /v1/users/{id}/sessions`): opens
    /// that user's cache (its last state shows at once), registers the APNs token the app handed
    /// over, if any, and opens the live stream if the app wants it open. Signing in as someone else
    /// while a user is signed in switches users, keeping the first one's cache for their return; to
    /// forget them, `signOut()` first.
    public func signIn(userID: String, sessionToken: String) async {
        await oneAtATime { await self.beginSession(userID: userID, sessionToken: sessionToken) }
    }

    private func beginSession(userID: String, sessionToken: String) async {
        if self.userID == userID {
            await updateSessionToken(sessionToken)
            return
        }
        if self.userID != nil { await endSession(deletingCache: false) }
        account += 1
        let account = self.account
        self.userID = userID
        await api.credentials.replace(sessionToken)
        // Opening (and migrating) SQLite waits on the file: not on the main actor.
        let url = configuration.cacheURL(for: userID)
        let opened = await Task.detached { [log] in url.flatMap { Self.openCache(at: $0, log: log) } }.value
        guard account == self.account else {
            await opened?.close()
            return
        }
        cache = opened
        channels.client = self
        if let cache, let saved = await cache.loadMeta(), account == self.account {
            deviceToken = saved.deviceToken
            if let unread = saved.unread { self.unread = unread }
            if let list = saved.channelList { channels.restore(list) }
        }
        log(.info, "signed in")
        // Registered at every sign-in, even when the cache says it was: registering for another user
        // since moved the device to them.
        if let registration = apnsRegistration, account == self.account {
            do {
                try await register(registration)
            } catch {
                log(.warning, "registering the device at sign-in failed: \(error)")
            }
        }
        if wantsStream, account == self.account, stream == nil { startStream() }
    }

    /// Signs the user out: unregisters this device for them (no more pushes of theirs reach it),
    /// closes the stream, forgets every collection, the channel list and the counts, and deletes
    /// their cache. The APNs token stays with the client for whoever signs in next.
    public func signOut() async {
        await oneAtATime {
            guard self.userID != nil else { return }
            if let token = self.deviceToken {
                do {
                    try await self.api.unregisterDevice(token: token)
                } catch {
                    self.log(.warning, "unregistering the device at sign-out failed: \(error)")
                }
            }
            await self.endSession(deletingCache: true)
        }
    }

    /// Runs sign-ins and sign-outs one after another, in the order they were asked for: each awaits
    /// the server and the cache, and two interleaved would mix one user's state into the other's.
    private func oneAtATime(_ work: @escaping @MainActor () async -> Void) async {
        let previous = accountChange
        let task = Task { @MainActor in
            await previous?.value
            await work()
        }
        accountChange = task
        await task.value
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
        let leaving = userID
        // First, so that whatever is in flight for this user finds the account changed and applies
        // nothing, and nothing new starts for them (a `connect()` now only notes that a stream is
        // wanted).
        account += 1
        userID = nil
        restoring = [:]
        let wanted = wantsStream
        await disconnect()
        wantsStream = wantsStream || wanted
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
            if deletingCache, let leaving, let url = configuration.cacheURL(for: leaving) { HeraldCache.delete(at: url) }
        }
        log(.info, deletingCache ? "signed out" : "switched users")
    }

    /// The cache at `url`, or none (with a warning) when it cannot be opened: the cache is a copy,
    /// and the app must start without it rather than not at all.
    nonisolated private static func openCache(at url: URL, log: ClientLog) -> HeraldCache? {
        do {
            return try HeraldCache(url: url)
        } catch {
            log(.warning, "the cache could not be opened; going on without one: \(error)")
            return nil
        }
    }
}
