import Foundation

extension HeraldClient {
    /// Opens the live stream (call it when the app comes to the foreground): events are applied to the
    /// open collections and the channel list as they happen, and while the stream is open the server
    /// sends this device no silent pushes. A dropped connection is reopened after an exponential
    /// backoff with jitter; every (re)opening syncs the open collections, since events may have been
    /// missed in between. A refused session asks the token provider once; if that fails the state
    /// becomes `.failed(.unauthorized)` and the stream stays closed.
    public func connect() {
        guard stream == nil else { return }
        stream = Task { @MainActor in await self.runStream() }
    }

    /// Closes the live stream (call it when the app goes to the background: silent pushes take over).
    public func disconnect() async {
        guard let stream else { return }
        stream.cancel()
        await stream.value
        self.stream = nil
        // The refreshes it started finish (they are not cancelled: see `refreshAll`).
        for refresh in streamRefreshes.values { await refresh.value }
        connectionState = .disconnected
    }

    /// Starts `work` in a task of its own, so that closing the stream does not cancel requests in
    /// flight (see `refreshAll`); `disconnect()` waits for it.
    private func startRefresh(_ work: @escaping @MainActor () async -> Void) {
        let key = nextStreamRefresh
        nextStreamRefresh += 1
        streamRefreshes[key] = Task {
            await work()
            self.streamRefreshes[key] = nil
        }
    }

    private func runStream() async {
        let transport = Self.makeTransport()
        var failures = 0
        while !Task.isCancelled {
            connectionState = .connecting
            let token = await api.credentials.token
            var headers = ["Authorization": "Bearer \(token)"]
            if let device = deviceReference { headers["Herald-Device"] = device }
            let opened = OpenedFlag()
            var closeCode: Int?
            do {
                closeCode = try await transport.run(url: streamURL, headers: headers, pingInterval: configuration.pingInterval) { text in
                    await self.receive(text, opened: opened)
                }
            } catch {
                closeCode = nil
            }
            if Task.isCancelled { break }
            if await opened.value { failures = 0 }
            // Refused before it opened (the upgrade's 401 is not visible on every platform), or closed
            // as revoked or expired (1008): the session decides whether to go on. A plain request asks
            // the provider for a new token if the server refuses this one.
            if !(await opened.value) || closeCode == 1008 {
                do {
                    _ = try await api.unread()
                } catch HeraldClientError.unauthorized {
                    connectionState = .failed(.unauthorized)
                    return
                } catch {}
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
    }

    private func receive(_ text: String, opened: OpenedFlag) async {
        guard let event = LiveEvent(text: text) else { return }
        if case .ready = event {
            await opened.set()
            connectionState = .connected
            // Whatever happened while the stream was closed is in the syncs.
            startRefresh { _ = try? await self.refreshAll() }
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
                let (_, _, removed) = collection.apply([], removed: [id], live: true)
                collection.takeUnread(unreadCount, at: position)
                await cache?.save(collection, upserted: [], removed: removed)
                collection.notify(.changed(inserted: [], updated: [], removed: removed))
            }
        case .channelRead(let url, let state, let position):
            noteUnread(state.unreadCount, channel: url, at: position)
            for collection in collections(of: url) {
                collection.takeState(state, at: position)
                // The copies' statuses changed with it: the sync brings them, each by position.
                startRefresh { _ = try? await collection.refresh() }
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
            startRefresh { _ = try? await self.refreshAll() }
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

    private func collections(of url: String) -> [NotificationCollection] {
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
