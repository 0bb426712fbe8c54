import Foundation
import HeraldCore
import HeraldServices
import HeraldStore
import Logging
import Metrics
import NIOCore
import NIOWebSocket
import Postgres
import ServiceLifecycle
import Synchronization

/// The live streams this process holds, and what keeps them current and visible to other processes.
///
/// Every transaction that changes something a stream shows sends a `LiveHint` (`NOTIFY herald_live`);
/// every Herald process's hub listens, and for the hint's users that have a stream here it reads the
/// change from the database and queues an event on each of their streams. So an event caused on one
/// process reaches sockets on all of them, and what a socket shows comes from Postgres, not from the
/// hint. Presence goes the other way: each stream is recorded under this process's node, which a
/// heartbeat keeps alive (`PresenceStore`); dispatchers everywhere read it.
public final class LiveHub: Service, Sendable {
    let settings: LiveSettings
    let collections: CollectionStore
    let presence: PresenceStore
    let push: PushStore
    let sessions: SessionStore
    let executor: PostgresExecutor
    /// The `herald_live` listener; `nil` hears nothing from the database (hints can still be
    /// handed to `handle(_:)`).
    let listener: PostgresListener?
    /// Hears every event of the listener first (see `ChangeNotifier`).
    let notifier: ChangeNotifier?
    let logger: Logger
    /// This process's presence node: random, so that processes never need to agree on ids.
    let node: Int64

    private let state = Mutex(State())
    private let openings = Mutex<[LiveConnection]>([])
    private let openingsWake = WakeSignal()
    /// Set once `LISTEN herald_live` is in effect: no stream is ready before, or it could miss events
    /// committed between its `ready` and the listener's start.
    private let listening = Mutex(false)
    private let handled = Atomic<Int>(0)
    private let sessionChecks = Atomic<Int>(0)
    private let channelURLs = Mutex<[Int64: String]>([:])

    private struct State {
        var nextID: Int64 = 1
        var connections: [Int64: LiveConnection] = [:]
        var byUser: [Int64: [Int64]] = [:]
    }

    public init(client: PostgresClient, settings: LiveSettings, listener: PostgresListener?, notifier: ChangeNotifier? = nil, logger: Logger) {
        self.settings = settings
        self.collections = CollectionStore(client: client)
        self.presence = PresenceStore(client: client)
        self.push = PushStore(client: client)
        self.sessions = SessionStore(client: client)
        self.executor = client.executor
        self.listener = listener
        self.notifier = notifier
        self.logger = logger
        self.node = Int64.random(in: 1...Int64.max)
    }

    // MARK: - Connections

    func makeConnectionID() -> Int64 {
        state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
    }

    /// Takes over an upgraded channel (on its event loop): the stream's handlers go into its pipeline,
    /// and the stream waits for its presence to be recorded. Streams are recorded in batches by one
    /// task (`recordOpenings`): a task and a transaction per stream cost more memory and time than the
    /// stream itself (10,000 opening at once queued as many tasks on the pool). A stream's end waits
    /// for its recording to be over, so presence is never recorded after it was removed.
    func attach(_ client: LiveClient, to channel: any NIOCore.Channel) throws {
        let connection = LiveConnection(id: makeConnectionID(), client: client, channel: channel, settings: settings)
        try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: TimeAmount(settings.pingInterval)))
        try channel.pipeline.syncOperations.addHandler(
            LiveChannelHandler(connection: connection) { connection in
                Task {
                    await connection.waitUntilPresenceSettled()
                    await self.closed(connection)
                }
            }
        )
        openings.withLock { $0.append(connection) }
        openingsWake.signal()
    }

    /// Records the presence of the streams opened since the last round in one statement (their
    /// devices are online from then on, on every process), then starts delivering events to them; the
    /// first event each gets is `ready`, and from it on every change reaches them (streams wait until
    /// the listener is in effect).
    private func recordOpenings() async {
        while !Task.isCancelled {
            let batch = openings.withLock { openings in
                defer { openings = [] }
                return openings
            }
            guard !batch.isEmpty, listener == nil || listening.withLock({ $0 }) else {
                if !batch.isEmpty { openings.withLock { $0.insert(contentsOf: batch, at: 0) } }
                await openingsWake.wait(timeout: .seconds(1))
                continue
            }
            do {
                try await presence.record(node: node, ttl: settings.presenceTTL, streams: batch.map(\.presence))
                for connection in batch { register(connection) }
                Gauge(label: "herald_stream_connections").record(count)
                // Read once they are registered: every change committed before lies below it, and every
                // one after reaches them as an event.
                let position = try await presence.currentPosition()
                for connection in batch {
                    connection.sendReady(LiveEvent.ready(connectionID: connection.id, deviceID: connection.deviceID, position: position))
                }
            } catch {
                logger.error("could not record streams' presence", metadata: ["error": logger.describe(error), "streams": "\(batch.count)"])
                for connection in batch { connection.close(.unexpectedServerError, reason: "presence unavailable") }
            }
            for connection in batch { connection.settlePresence() }
        }
        // Shutting down: whatever still waits never opened.
        for connection in openings.withLock({ $0 }) {
            connection.close(.goingAway, reason: "server shutting down")
            connection.settlePresence()
        }
    }

    /// Starts delivering to the stream; past the user's limit, the user's oldest open streams close.
    private func register(_ connection: LiveConnection) {
        let displaced = state.withLock { state -> [LiveConnection] in
            state.connections[connection.id] = connection
            state.byUser[connection.user.key, default: []].append(connection.id)
            // Registration order is age order; streams already closing no longer count.
            let open = (state.byUser[connection.user.key] ?? []).compactMap { state.connections[$0] }.filter { !$0.isClosing }
            return Array(open.dropLast(settings.maximumStreamsPerUser))
        }
        for stream in displaced { stream.close(.policyViolation, reason: "too many streams") }
    }

    /// The stream ended: it stops counting as online, and what it could have shown counts as seen
    /// (see `PresenceStore.remove`).
    func closed(_ connection: LiveConnection) async {
        forget(connection)
        Gauge(label: "herald_stream_connections").record(count)
        do {
            try await presence.remove(node: node, stream: connection.presence, policy: settings.multiDevice)
        } catch {
            // The heartbeat re-records only open streams, and the row goes with the node at the latest.
            logger.warning("could not remove a closed stream's presence", metadata: ["error": logger.describe(error)])
        }
    }

    private func forget(_ connection: LiveConnection) {
        state.withLock { state in
            state.connections[connection.id] = nil
            state.byUser[connection.user.key]?.removeAll { $0 == connection.id }
            if state.byUser[connection.user.key]?.isEmpty == true { state.byUser[connection.user.key] = nil }
        }
    }

    /// Hints handled since start (tests wait on it).
    var hintsHandled: Int {
        handled.load(ordering: .relaxed)
    }

    /// Session checks of every open stream completed since start (tests count heartbeats with it).
    var sessionChecksDone: Int {
        sessionChecks.load(ordering: .relaxed)
    }

    /// Open streams on this process.
    var count: Int {
        state.withLock { $0.connections.count }
    }

    /// The streams of `userKey` on this process.
    func connections(of userKey: Int64) -> [LiveConnection] {
        state.withLock { state in (state.byUser[userKey] ?? []).compactMap { state.connections[$0] } }
    }

    private var allConnections: [LiveConnection] {
        state.withLock { Array($0.connections.values) }
    }

    private var localUsers: [Int64] {
        state.withLock { Array($0.byUser.keys) }
    }

    // MARK: - Service

    public func run() async throws {
        // Before the first stream can open: the node must exist for presence rows to refer to it.
        try? await heartbeat()
        await withDiscardingTaskGroup { group in
            group.addTask { await self.listen() }
            group.addTask { await self.beat() }
            group.addTask { await self.recordOpenings() }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        for connection in allConnections {
            connection.close(.goingAway, reason: "server shutting down")
        }
        do {
            // In a task of its own: an application stopped by cancellation (tests) still removes it.
            let (presence, node) = (self.presence, self.node)
            try await Task { try await presence.removeNode(node) }.value
        } catch {
            logger.warning("could not remove this process's presence node; it expires by itself", metadata: ["error": "\(error)"])
        }
    }

    private func listen() async {
        guard let listener else { return }
        var listening = false  // this loop's: a second `.listening` is a reconnect
        var observer: (@Sendable (PostgresListenerEvent) -> Void)?
        if let notifier { observer = { event in notifier.observe(event) } }
        for await event in listener.events(observer: observer) {
            switch event {
            case .listening:
                // After a reconnect, hints sent meanwhile are lost: streams must sync, and sessions
                // revoked meanwhile must end their streams now rather than at the next heartbeat.
                if listening {
                    for connection in allConnections { connection.send(LiveEvent.resync) }
                    await checkSessions()
                }
                listening = true
                self.listening.withLock { $0 = true }
                openingsWake.signal()
            case .disconnected:
                continue
            case .notification(let notification):
                guard let hint = LiveHint.Received(payload: notification.payload)?.hint else { continue }
                await withTaskExecutorPreference(executor) {
                    do {
                        try await self.handle(hint)
                    } catch {
                        self.logger.error("live event failed; its streams must sync", metadata: ["error": self.logger.describe(error)])
                    }
                }
                handled.add(1, ordering: .relaxed)
                Counter(label: "herald_live_hints_total").increment()
            }
            if Task.isCancelled { break }
        }
    }

    private func beat() async {
        while !Task.isCancelled {
            do {
                try await heartbeat()
            } catch {
                logger.error("presence heartbeat failed", metadata: ["error": logger.describe(error)])
            }
            await checkSessions()
            try? await Task.sleep(for: settings.heartbeat)
        }
    }

    /// Closes (1008) every stream whose session has expired or is gone. A revocation also arrives as a
    /// hint, but a hint can be lost — while the listener reconnects, when its queue overflows, or before
    /// a new stream is registered — so every heartbeat asks the database about every open stream.
    func checkSessions() async {
        let now = Date()
        var open: [LiveConnection] = []
        for connection in allConnections where !connection.isClosing {
            if connection.sessionExpiresAt <= now {
                connection.close(.policyViolation, reason: "session expired")
            } else {
                open.append(connection)
            }
        }
        do {
            let live = try await sessions.liveSessions(among: open.map { ($0.user.id, $0.sessionHash) })
            for connection in open where !live.contains(connection.sessionHash) {
                connection.close(.policyViolation, reason: "session revoked")
            }
        } catch {
            logger.error("could not check open streams' sessions", metadata: ["error": logger.describe(error)])
        }
        sessionChecks.add(1, ordering: .relaxed)
    }

    /// Renews this node; if it had been taken for dead, records its open streams again.
    func heartbeat() async throws {
        if try await presence.heartbeat(node: node, ttl: settings.presenceTTL) {
            try await presence.record(node: node, ttl: settings.presenceTTL, streams: allConnections.map(\.presence))
        }
    }

    // MARK: - Hints

    /// Turns a hint into events on this process's streams.
    func handle(_ hint: LiveHint) async throws {
        switch hint {
        case .notification(let change, let id, let channelKey, let recipients):
            let users = localUsers.filter(recipients.contains)
            guard !users.isEmpty, let url = try await channelURL(channelKey) else { return }
            let copies = try await collections.liveCopies(notificationID: id, channelKey: channelKey, userKeys: users)
            guard !copies.isEmpty else { return }
            let summaries = try await push.refreshSummaries(userKeys: copies.map(\.userKey))
            for copy in copies {
                let channels = summaries[copy.userKey] ?? []
                let unread = channels.first { $0.url == url }?.unread ?? 0
                let event = LiveEvent.notification(change, channelURL: url, copy: copy, unreadCount: unread)
                let badge = LiveEvent.badge(channels.reduce(0) { $0 + $1.unread })
                for connection in connections(of: copy.userKey) {
                    connection.send(event)
                    connection.send(badge)
                }
            }
        case .channelState(let userKey, let channelKey):
            guard !connections(of: userKey).isEmpty, let url = try await channelURL(channelKey) else { return }
            let (state, position) = try await collections.liveState(userKey: userKey, channelKey: channelKey)
            let badge = try await push.refreshSummaries(userKeys: [userKey])[userKey]?.reduce(0) { $0 + $1.unread } ?? 0
            for connection in connections(of: userKey) {
                connection.send(LiveEvent.channelRead(channelURL: url, position: position, state: state))
                connection.send(LiveEvent.badge(badge))
            }
        case .delivered(let userKey, let channelKey, let ids):
            guard !connections(of: userKey).isEmpty, let url = try await channelURL(channelKey) else { return }
            let positions = try await collections.positions(userKey: userKey, channelKey: channelKey, ids: ids)
            let event = LiveEvent.deliveryUpdated(channelURL: url, position: positions.values.max() ?? 0, ids: ids)
            for connection in connections(of: userKey) { connection.send(event) }
        case .channelChanged(let channelKey):
            let users = try await collections.listers(channelKey: channelKey, among: localUsers)
            // Read for every hint: the cached URL never changes, the rest of the definition does.
            guard !users.isEmpty, let channel = try await collections.channel(key: channelKey) else { return }
            let event = LiveEvent.channelUpdated(channel)
            for user in users {
                for connection in connections(of: user) { connection.send(event) }
            }
        case .channelDeleted(let url, let xid):
            let users = try await collections.removalRecipients(channelURL: url, xid: xid, among: localUsers)
            guard !users.isEmpty else { return }
            let summaries = try await push.refreshSummaries(userKeys: users)
            let event = LiveEvent.channelDeleted(url: url)
            for user in users {
                let badge = LiveEvent.badge(summaries[user]?.reduce(0) { $0 + $1.unread } ?? 0)
                for connection in connections(of: user) {
                    connection.send(event)
                    connection.send(badge)
                }
            }
        case .devicesChanged, .ping:
            return  // for change notifiers only
        case .sessionsRevoked(let userKey):
            let streams = connections(of: userKey)
            let live = try await sessions.liveSessions(among: streams.map { ($0.user.id, $0.sessionHash) })
            for connection in streams where !live.contains(connection.sessionHash) {
                connection.close(.policyViolation, reason: "session revoked")
            }
        }
    }

    /// A channel's URL by key. Cached for good: a key is never reused for another channel (a channel
    /// deleted and created again gets a new key).
    private func channelURL(_ key: Int64) async throws -> String? {
        if let url = channelURLs.withLock({ $0[key] }) { return url }
        guard let url = try await collections.channel(key: key)?.url else { return nil }
        channelURLs.withLock { $0[key] = url }
        return url
    }
}
