import Foundation

extension HeraldClient {
    /// Opens the live stream (the app came to the foreground): events are applied to the open
    /// collections and the channel list as they happen, and while the stream is open the server sends
    /// this device no silent pushes. A dropped connection is reopened after an exponential backoff
    /// with jitter, or at once when the network comes back; every (re)opening syncs the open
    /// collections, since events may have been missed in between. A refused session asks the token
    /// provider once; if that fails the state becomes `.failed(.unauthorized)` until the next
    /// `connect()` or `updateSessionToken(_:)`. Calling it while a stream runs does nothing.
    public func connect() {
        wantsStream = true
        guard stream == nil, userID != nil else { return }
        startStream()
    }

    /// Closes the live stream (the app goes to the background: silent pushes take over) and waits
    /// for it and for the refreshes the library started by itself (the stream's, the foreground's),
    /// so that what they bring is applied and saved before the app is suspended. A `connect()` made
    /// while this waits opens a new stream at once: the one being closed can no longer change
    /// anything.
    public func disconnect() async {
        wantsStream = false
        streamGeneration += 1
        connectionState = .disconnected
        catchingUp?.cancel()
        catchingUp = nil
        if let closing = stream {
            stream = nil
            closing.cancel()
            await closing.value
        }
        // They finish rather than being cancelled (see `refreshAll`).
        for refresh in backgroundRefreshes.values { await refresh.value }
    }

    /// A new stream, in a generation of its own; the one before, if any, is cancelled.
    func startStream() {
        stream?.cancel()
        catchingUp?.cancel()
        catchingUp = nil
        streamGeneration += 1
        let generation = streamGeneration
        stream = Task { @MainActor in await self.runStream(generation) }
    }

    /// Starts a refresh in a task of its own, so that closing the stream does not cancel requests in
    /// flight (see `refreshAll`); `disconnect()` and sign-out wait for it. Its requests wait out a
    /// `429` (`refreshAllInBackground`, `retryingRateLimits`).
    @discardableResult
    func startBackgroundRefresh(_ why: String, _ work: @escaping @MainActor () async throws -> Void) -> Task<Void, Never> {
        let key = nextBackgroundRefresh
        nextBackgroundRefresh += 1
        let task = Task {
            do {
                try await work()
            } catch {
                self.log(.warning, "\(why): refresh failed: \(error)")
            }
            self.backgroundRefreshes[key] = nil
        }
        backgroundRefreshes[key] = task
        return task
    }

    /// Syncs every collection once the stream is ready, and again — a quarter of a second later, then
    /// less and less often — while a collection's answers stop below the ready's `position`: an answer
    /// is held back below any transaction still open in the database cluster, so a change committed
    /// just before the stream was ready may be in no answer yet, and it will come as no event. Gives
    /// up after 30 s (a transaction held open that long holds back every sync anyway). The waits
    /// end with the stream; the refreshes are background refreshes, which `disconnect()` awaits.
    func catchUp(to position: Int64?, generation: Int) {
        let first = startBackgroundRefresh("stream opened") { try await self.refreshAllInBackground() }
        guard let position else { return }
        catchingUp?.cancel()
        catchingUp = Task { @MainActor in
            await first.value
            let started = ContinuousClock.now
            var delay = Duration.milliseconds(250)
            while streamGeneration == generation, !Task.isCancelled {
                let behind = collections.values.contains { $0.token != nil && $0.syncedThrough < position }
                guard behind, ContinuousClock.now - started + delay <= .seconds(30) else { return }
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    return
                }
                guard streamGeneration == generation else { return }
                await startBackgroundRefresh("catching up after the stream opened") { try await self.refreshAllInBackground() }.value
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// Runs `work` (one request, or work that repeats nothing when run again), and after a `429`
    /// waits its `Retry-After` and runs it again, up to `Configuration.rateLimitRetries` times, while
    /// the same user is signed in and the wait is at most `longestRateLimitWait`.
    func retryingRateLimits<T>(_ work: @MainActor () async throws -> T) async throws -> T {
        var waits = 0
        let account = self.account
        while true {
            do {
                return try await work()
            } catch HeraldClientError.rateLimited(let retryAfter)
                where waits < configuration.rateLimitRetries && retryAfter <= Self.longestRateLimitWait && account == self.account
            {
                waits += 1
                log(.warning, "rate limited; trying again in \(retryAfter)")
                try await Task.sleep(for: retryAfter)
            }
        }
    }

    /// A `Retry-After` longer than this is not waited out by the library (the next push, foreground or
    /// reconnection tries again): a sign-out or a disconnect waits for the library's refreshes.
    static let longestRateLimitWait: Duration = .seconds(30)

    private func runStream(_ generation: Int) async {
        let transport = Self.makeTransport()
        var failures = 0
        let current = { [weak self] in self?.streamGeneration == generation && !Task.isCancelled }
        while current() {
            connectionState = .connecting
            var headers: [String: String] = [:]
            guard let token = try? await api.credentials.current(), current() else { break }
            headers["Authorization"] = "Bearer \(token)"
            if let device = deviceToken { headers["Herald-Device"] = device }
            let opened = OpenedFlag()
            var closeCode: Int?
            do {
                closeCode = try await transport.run(url: streamURL, headers: headers, pingInterval: configuration.pingInterval) { text in
                    // Parsed where the transport delivers it, off the main actor.
                    guard let event = LiveEvent(text: text) else { return }
                    await self.receive(event, opened: opened, generation: generation)
                }
            } catch {
                closeCode = nil
            }
            guard current() else { break }
            let wasOpen = await opened.value
            log(.info, wasOpen ? "stream closed (\(closeCode.map(String.init) ?? "no close code"))" : "stream could not open")
            if wasOpen { failures = 0 }
            // Refused before it opened (the upgrade's answer is not visible on every platform), or
            // closed as revoked or expired (1008): a plain request that names the device finds out
            // why — a session the provider cannot renew ends the stream; a device the server lost is
            // recovered, so the next attempt names the right one.
            if !wasOpen || closeCode == 1008 {
                do {
                    try await channels.refresh()
                } catch HeraldClientError.unauthorized {
                    guard current() else { break }
                    // Ended: a later `connect()` (the next foreground) or a new session tries again.
                    stream = nil
                    connectionState = .failed(.unauthorized)
                    tell(.sessionRefused)
                    return
                } catch {}
                guard current() else { break }
            }
            failures += 1
            connectionState = .waitingToReconnect
            do {
                try await Task.sleep(
                    for: Backoff.delay(attempt: failures, initial: configuration.initialReconnectDelay, maximum: configuration.maximumReconnectDelay)
                )
            } catch {
                break
            }
        }
        // A stream replaced by a newer one leaves its state alone; one that ended by itself (signed
        // out under it) clears its slot.
        if streamGeneration == generation, !Task.isCancelled {
            stream = nil
            connectionState = .disconnected
        }
    }

    private func receive(_ event: LiveEvent, opened: OpenedFlag, generation: Int) async {
        guard streamGeneration == generation else { return }
        if case .ready(let position) = event {
            await opened.set()
            guard streamGeneration == generation else { return }
            connectionState = .connected
            // Whatever happened while the stream was closed is in the syncs.
            catchUp(to: position, generation: generation)
            return
        }
        await apply(event)
    }

    /// Applies one stream event (the stream is the fast path; syncs stay the truth).
    func apply(_ event: LiveEvent) async {
        switch event {
        case .upserted(let url, let notification, let unreadCount):
            // The client's count first: saving to the cache suspends, and whoever looks in between
            // must not see a collection that holds the event beside a count that does not.
            noteUnread(unreadCount, channel: url, at: notification.position)
            for collection in collections(of: url) {
                let (inserted, updated, _) = collection.apply([notification], removed: [], live: true)
                collection.takeUnread(unreadCount, at: notification.position)
                await cache?.save(collection, upserted: collection.held(inserted + updated), removed: [])
                collection.notify(.changed(inserted: inserted, updated: updated, removed: []))
            }
        case .deleted(let url, let id, let position, let unreadCount):
            noteUnread(unreadCount, channel: url, at: position)
            for collection in collections(of: url) {
                let (_, _, removed) = collection.apply([], removed: [id], at: position, live: true)
                collection.takeUnread(unreadCount, at: position)
                await cache?.save(collection, upserted: [], removed: removed)
                collection.notify(.changed(inserted: [], updated: [], removed: removed))
            }
        case .channelRead(let url, let state, let position):
            noteUnread(state.unreadCount, channel: url, at: position)
            for collection in collections(of: url) {
                collection.takeState(state, at: position)
                // The copies' statuses changed with it: the sync brings them, each by position.
                startBackgroundRefresh("channel read elsewhere") { _ = try await self.retryingRateLimits { try await collection.refresh() } }
            }
        case .delivered(let url, let ids, let position):
            for collection in collections(of: url) {
                var updated: [String] = []
                for id in ids {
                    guard let index = collection.index(of: id), collection.notifications[index].position <= position,
                        collection.notifications[index].status == .sent
                    else { continue }
                    collection.notifications[index].status = .delivered
                    collection.notifications[index].position = position
                    updated.append(id)
                }
                await cache?.save(collection, upserted: collection.held(updated), removed: [])
                collection.notify(.changed(inserted: [], updated: updated, removed: []))
            }
        case .channelUpdated(let info):
            channels.update(info)
        case .channelDeleted(let url):
            channels.remove(url)
            unread.byChannel[url] = nil
        case .badge(let badge):
            unread.total = badge
        case .resync:
            startBackgroundRefresh("the server asked for a resync") { try await self.refreshAllInBackground() }
        case .ready, .unknown:
            break
        }
    }

    /// A channel's unread count from an event, unless an event of a later change already gave one
    /// (events of one user arrive in order, but a late one must not undo a newer count).
    func noteUnread(_ count: Int, channel url: String, at position: Int64) {
        guard position >= unreadPositions[url, default: 0] else { return }
        unreadPositions[url] = position
        unread.byChannel[url] = count
    }

    func collections(of url: String) -> [NotificationCollection] {
        collections.values.filter { $0.channelURL == url && $0.token != nil }
    }

    /// `ws(s)://…/v1/me/stream` on the server's host.
    var streamURL: URL {
        var components = URLComponents(url: configuration.serverURL, resolvingAgainstBaseURL: false)!
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        components.path = components.path.hasSuffix("/") ? components.path + "v1/me/stream" : components.path + "/v1/me/stream"
        return components.url!
    }

    static func makeTransport() -> any WebSocketTransport {
        #if canImport(Darwin)
        return URLSessionWebSocketTransport()
        #else
        return NIOWebSocketTransport()
        #endif
    }
}

/// Whether the stream of one connection said `ready` (set from the message callback).
actor OpenedFlag {
    private(set) var value = false

    func set() {
        value = true
    }
}
