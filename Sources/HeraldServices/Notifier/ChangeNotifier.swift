import Foundation
import HeraldCore
import HeraldStore
import Logging
import Metrics
import Postgres
import ServiceLifecycle
import Synchronization

/// What this process heard changed, for whom, and the answers it may therefore give from memory: a
/// quiet poll of a collection, a session check, and whether a sync naming a device has anything to
/// write.
///
/// Fed by the `herald_live` listener (every hint carries its transaction's id; see `ChangeRecord` for
/// why that makes a kept answer safe to give again). An answer from memory is the answer the database
/// would have given from a snapshot a moment older, and it never moves a token, so late commits stay
/// safe: the next poll that reaches the database continues from where the client really is.
///
/// Nothing is answered from memory unless the listener is known to hear everything: from a
/// `.listening` until this process has heard a ping of its own sent after it (which also sets the
/// floor: transactions before it were never heard), and whenever its newest heard ping was sent more
/// than `staleAfter` ago (a listener that lost its connection without noticing, or that lags).
public final class ChangeNotifier: Service, Sendable {
    /// How the notifier behaves; the defaults are production's, tests shorten the waits.
    public struct Settings: Sendable {
        /// `HERALD_MEMORY_ANSWERS=off` answers everything from the database.
        public var enabled = true
        /// Kept poll answers, and as many sessions and devices (`HERALD_MEMORY_ENTRIES`).
        public var capacity = 100_000
        /// How often this process pings its own listener.
        public var pingInterval: Duration = .seconds(1)
        /// Memory answers nothing while the newest ping heard was sent longer ago than this.
        public var staleAfter: Duration = .seconds(3)
        /// A kept poll answer is given at most this long: a client whose answers all come from memory
        /// keeps its token, and the database moves it forward again once in a while (so that it stays
        /// above the compaction bound).
        public var maximumAge: Duration = .seconds(300)
        /// A device's sync is recorded in the database at least this often (`PushStore.syncedAtResolution`).
        public var deviceResolution: Duration = PushStore.syncedAtResolution
        /// Long polls one user may have waiting on this process (`HERALD_LONG_POLL_MAX_PER_USER`) and
        /// the process in all (`HERALD_LONG_POLL_MAX`); past either, a long poll answers at once.
        public var maximumWaitsPerUser = 10
        public var maximumWaits = 20_000

        public init() {}
    }

    /// A session as memory knows it.
    public struct Session: Sendable {
        public var userKey: Int64
        public var expiresAt: Date

        public init(userKey: Int64, expiresAt: Date) {
            self.userKey = userKey
            self.expiresAt = expiresAt
        }
    }

    let settings: Settings
    let client: PostgresClient
    let logger: Logger
    let node = Int64.random(in: 1...Int64.max)
    /// The clock ages are measured on (tests drive their own).
    let now: @Sendable () -> ContinuousClock.Instant
    private let state: Mutex<State>
    private let pingWake = WakeSignal()
    private let counters: Counters
    private let pollHits = Atomic<Int>(0)
    private let pollMisses = Atomic<Int>(0)
    private let pollBypasses = Atomic<Int>(0)
    private let sessionHits = Atomic<Int>(0)

    /// Polls answered from memory, polls memory could not answer, polls it did not try (not
    /// answering), and session checks answered from memory, since start (tests and benchmarks read
    /// them; the same counts are the metric `herald_memory_answers_total`).
    public var tallies: (pollHits: Int, pollMisses: Int, pollBypasses: Int, sessionHits: Int) {
        (
            pollHits.load(ordering: .relaxed), pollMisses.load(ordering: .relaxed), pollBypasses.load(ordering: .relaxed),
            sessionHits.load(ordering: .relaxed)
        )
    }

    /// Whether memory answers now (the listener proven current).
    public var isAnswering: Bool {
        let now = self.now()
        return state.withLock { isAnswering($0, now: now) }
    }

    private enum Listening {
        /// No listener, or it lost its connection: nothing is vouched for.
        case down
        /// `LISTEN` is in effect again; the first ping of sequence `firstPing` or later opens answering.
        case starting(firstPing: Int64)
        case answering
    }

    private struct PollKey: Hashable {
        var userKey: Int64
        var channelURL: String
        var filter: CollectionFilter
    }

    private struct SessionKey: Hashable {
        var userID: String
        var hash: [UInt8]
    }

    private struct DeviceKey: Hashable {
        var userKey: Int64
        var device: DeviceReference
    }

    /// A long poll waiting for a change: of its user's collection of a channel, or of their list.
    private struct Wait {
        var channelKey: Int64?
        /// Set once the waiting task has suspended.
        var waiter: CheckedContinuation<WaitOutcome, Never>?
        /// How it ended, when that happened before the task suspended.
        var ended: WaitOutcome?
    }

    private struct KeptPoll {
        var poll: QuietPoll
        var storedAt: ContinuousClock.Instant
    }

    private struct KeptSession {
        var session: Session
        var horizon: Int64
    }

    private struct KeptDevice {
        var horizon: Int64
        var syncedAt: ContinuousClock.Instant
    }

    private struct State {
        var listening = Listening.down
        var record: ChangeRecord
        var polls: Generations<PollKey, KeptPoll>
        var sessions: Generations<SessionKey, KeptSession>
        var devices: Generations<DeviceKey, KeptDevice>
        var nextPing: Int64 = 1
        var pingsSent: [Int64: ContinuousClock.Instant] = [:]
        /// When the newest ping heard was sent: every hint committed before then has been heard.
        var provenAt: ContinuousClock.Instant?
        /// Long polls waiting for a change, by user.
        var waits: [Int64: [Int: Wait]] = [:]
        var waitCount = 0
        /// Shutting down: no long poll waits any more.
        var closed = false
        /// Callers of `catchUp`, each waiting for the ping of a sequence or later.
        var catchingUp: [(id: Int, sequence: Int64, waiter: CheckedContinuation<Void, Never>)] = []
        var nextWaiter = 0

        init(capacity: Int) {
            record = ChangeRecord(floor: 0, capacity: capacity * 2)
            polls = Generations(capacity: capacity)
            sessions = Generations(capacity: capacity)
            devices = Generations(capacity: capacity)
        }

        mutating func forgetAll(capacity: Int) {
            var fresh = State(capacity: capacity)
            fresh.nextPing = nextPing
            fresh.nextWaiter = nextWaiter
            fresh.closed = closed
            self = fresh
        }
    }

    private struct Counters: Sendable {
        let pollHits = Counter(label: "herald_memory_answers_total", dimensions: [("kind", "poll"), ("outcome", "hit")])
        let pollMisses = Counter(label: "herald_memory_answers_total", dimensions: [("kind", "poll"), ("outcome", "miss")])
        let pollBypasses = Counter(label: "herald_memory_answers_total", dimensions: [("kind", "poll"), ("outcome", "bypass")])
        let sessionHits = Counter(label: "herald_memory_answers_total", dimensions: [("kind", "session"), ("outcome", "hit")])
        let sessionMisses = Counter(label: "herald_memory_answers_total", dimensions: [("kind", "session"), ("outcome", "miss")])
        let sessionBypasses = Counter(label: "herald_memory_answers_total", dimensions: [("kind", "session"), ("outcome", "bypass")])
        let entries = Gauge(label: "herald_memory_entries")
        let waits = Gauge(label: "herald_long_polls_waiting")
    }

    public init(
        client: PostgresClient,
        settings: Settings = Settings(),
        logger: Logger,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.client = client
        self.now = now
        self.settings = settings
        self.logger = logger
        self.state = Mutex(State(capacity: settings.capacity))
        self.counters = Counters()
    }

    // MARK: - Hearing

    /// Takes one event of the `herald_live` listener. Called on the listener's own thread, in the
    /// order the events arrive, so it only updates memory.
    public func observe(_ event: PostgresListenerEvent) {
        switch event {
        case .listening:
            // Hints sent while the connection was down are lost: start over, and answer again once a
            // ping sent from now on comes back.
            startOver()
        case .disconnected:
            let (waiting, waits) = state.withLock { state in
                defer {
                    state.listening = .down
                    state.catchingUp = []
                }
                return (state.catchingUp.map(\.waiter), Self.takeWaits(from: &state) { _, _ in true })
            }
            for waiter in waiting { waiter.resume() }
            for wait in waits { wait.resume(returning: .changed) }
        case .notification(let notification):
            guard let received = LiveHint.Received(payload: notification.payload) else {
                // A hint this process cannot read (another version's) still changed something, and
                // says neither what nor when: nothing kept can be vouched for.
                startOver()
                return
            }
            hear(received)
        }
    }

    /// Forgets everything and answers again once a ping sent from now on comes back (its transaction
    /// id then sets the floor).
    private func startOver() {
        let (waiting, waits) = state.withLock { state in
            defer {
                state.forgetAll(capacity: settings.capacity)
                state.listening = .starting(firstPing: state.nextPing)
            }
            return (state.catchingUp.map(\.waiter), Self.takeWaits(from: &state) { _, _ in true })
        }
        // Memory answers nothing older than this, so whoever waited to catch up has.
        for waiter in waiting { waiter.resume() }
        // Hints may have been lost: every long poll looks again.
        for wait in waits { wait.resume(returning: .changed) }
        pingWake.signal()
    }

    private func hear(_ received: LiveHint.Received) {
        let (caughtUp, woken) = state.withLock { state -> ([CheckedContinuation<Void, Never>], [CheckedContinuation<WaitOutcome, Never>]) in
            if case .ping(let node, let sequence) = received.hint {
                guard node == self.node else { return ([], []) }
                heardPing(sequence, xid: received.transactionID, in: &state)
                let caughtUp = state.catchingUp.filter { $0.sequence <= sequence }
                state.catchingUp.removeAll { $0.sequence <= sequence }
                return (caughtUp.map(\.waiter), [])
            }
            switch state.record.record(received) {
            case .nobody:
                return ([], [])
            case .users(let keys):
                return ([], Self.takeWaits(from: &state, users: keys))
            case .span(let after, let through):
                return ([], Self.takeWaits(from: &state) { user, _ in user > after && user <= through })
            case .channel(let channel):
                return ([], Self.takeWaits(from: &state) { _, wait in wait.channelKey == nil || wait.channelKey == channel })
            case .everyone:
                return ([], Self.takeWaits(from: &state) { _, _ in true })
            }
        }
        for waiter in caughtUp { waiter.resume() }
        for wait in woken { wait.resume(returning: .changed) }
    }

    private func heardPing(_ sequence: Int64, xid: Int64, in state: inout State) {
        guard let sentAt = state.pingsSent.removeValue(forKey: sequence) else { return }
        state.pingsSent = state.pingsSent.filter { $0.key > sequence }
        switch state.listening {
        case .down:
            return
        case .starting(let firstPing):
            guard sequence >= firstPing else { return }
            // Every transaction that committed before `LISTEN` took effect got its id before this ping's.
            state.record.raiseFloor(xid)
            state.listening = .answering
        case .answering:
            break
        }
        state.provenAt = sentAt
    }

    private func isAnswering(_ state: State, now: ContinuousClock.Instant) -> Bool {
        guard settings.enabled, case .answering = state.listening, let provenAt = state.provenAt else { return false }
        return now - provenAt <= settings.staleAfter
    }

    /// Returns once this process has heard every hint committed before the call (a ping sent after it
    /// came back), so that what the caller just wrote is never answered from memory as it was before;
    /// or after `staleAfter`, when memory stops answering until a ping comes back. Writes call it before
    /// they answer, so that a client that writes and then polls the same process sees its write.
    /// Concurrent callers share a ping.
    public func catchUp() async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        let timeout = Task { [settings] in
            try? await Task.sleep(for: settings.staleAfter)
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let index = state.catchingUp.firstIndex(where: { $0.id == id }) else { return nil }
                // Unproven: nothing from memory until a ping comes back.
                state.provenAt = nil
                return state.catchingUp.remove(at: index).waiter
            }
            waiter?.resume()
        }
        await withCheckedContinuation { continuation in
            let waits = state.withLock { state -> Bool in
                // Down: memory gives nothing that could be older than the write. Starting: the ping
                // that opens answering is one sent after this call, so waiting for it covers the write.
                guard settings.enabled else { return false }
                if case .down = state.listening { return false }
                // The next ping the loop sends is one sent after this call.
                state.catchingUp.append((id, state.nextPing, continuation))
                return true
            }
            if waits { pingWake.signal() } else { continuation.resume() }
        }
        timeout.cancel()
    }

    // MARK: - Long polls

    /// How a long poll's wait ended.
    public enum WaitOutcome: Sendable, Equatable {
        /// Something it shows may have changed: look again.
        case changed
        /// Its time ran out, or the server is shutting down: answer what it has.
        case timedOut
        /// It did not wait: memory is not answering (its hints may be lost), or too many wait.
        case refused
    }

    /// Waits up to `timeout` until a hint may have changed what `userKey`'s poll read from a snapshot
    /// with `horizon` shows — of channel `channelKey`, or of the channel list when `nil`. A change
    /// heard since that snapshot ends it at once, so none falls between the answer and the wait. Ends
    /// early, as `.timedOut`, when the server shuts down.
    public func waitForChange(userKey: Int64, channelKey: Int64?, horizon: Int64, timeout: Duration) async -> WaitOutcome {
        let now = self.now()
        let reserved = state.withLock { state -> Result<Int, Refusal> in
            guard !state.closed, isAnswering(state, now: now) else { return .failure(Refusal(outcome: .refused)) }
            let changed =
                if let channelKey {
                    state.record.collectionsChanged(userKey: userKey, channelKey: channelKey)
                } else {
                    state.record.listChanged(userKey: userKey)
                }
            if changed >= horizon { return .failure(Refusal(outcome: .changed)) }
            guard state.waitCount < settings.maximumWaits, (state.waits[userKey]?.count ?? 0) < settings.maximumWaitsPerUser else {
                return .failure(Refusal(outcome: .refused))
            }
            let id = state.nextWaiter
            state.nextWaiter += 1
            state.waits[userKey, default: [:]][id] = Wait(channelKey: channelKey)
            state.waitCount += 1
            return .success(id)
        }
        let id: Int
        switch reserved {
        case .failure(let refusal): return refusal.outcome
        case .success(let reserved): id = reserved
        }
        counters.waits.record(waiting)
        defer { counters.waits.record(waiting) }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            self.end(id, userKey: userKey, .timedOut)
        }
        defer { timer.cancel() }
        return await withGracefulShutdownHandler {
            // A client that has gone frees its place at once, if its task is cancelled.
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let ended = state.withLock { state -> WaitOutcome? in
                        guard let wait = state.waits[userKey]?[id] else { return .changed }
                        if let ended = wait.ended {
                            Self.remove(id, userKey: userKey, from: &state)
                            return ended
                        }
                        state.waits[userKey]?[id]?.waiter = continuation
                        return nil
                    }
                    if let ended { continuation.resume(returning: ended) }
                }
            } onCancel: {
                self.end(id, userKey: userKey, .timedOut)
            }
        } onGracefulShutdown: {
            self.end(id, userKey: userKey, .timedOut)
        }
    }

    private struct Refusal: Error {
        var outcome: WaitOutcome
    }

    /// Long polls waiting now (tests and benchmarks read it).
    public var waiting: Int {
        state.withLock { $0.waitCount }
    }

    /// Ends one wait: resumes it, or records how it ended for when it suspends.
    private func end(_ id: Int, userKey: Int64, _ outcome: WaitOutcome) {
        let waiter = state.withLock { state -> CheckedContinuation<WaitOutcome, Never>? in
            guard let wait = state.waits[userKey]?[id], wait.ended == nil else { return nil }
            guard let waiter = wait.waiter else {
                state.waits[userKey]?[id]?.ended = outcome
                return nil
            }
            Self.remove(id, userKey: userKey, from: &state)
            return waiter
        }
        waiter?.resume(returning: outcome)
    }

    private static func remove(_ id: Int, userKey: Int64, from state: inout State) {
        guard state.waits[userKey]?.removeValue(forKey: id) != nil else { return }
        if state.waits[userKey]?.isEmpty == true { state.waits[userKey] = nil }
        state.waitCount -= 1
    }

    /// Ends the waits of `users` with `.changed`: returns those to resume (the others are marked).
    private static func takeWaits(from state: inout State, users: [Int64]) -> [CheckedContinuation<WaitOutcome, Never>] {
        takeWaits(from: &state, among: users) { _, _ in true }
    }

    /// Ends the waits that `matches` picks with `outcome`: returns those to resume (the others, not
    /// yet suspended, are marked, and return it when they get there).
    private static func takeWaits(
        from state: inout State,
        among users: [Int64]? = nil,
        ending outcome: WaitOutcome = .changed,
        where matches: (_ userKey: Int64, Wait) -> Bool
    ) -> [CheckedContinuation<WaitOutcome, Never>] {
        var taken: [CheckedContinuation<WaitOutcome, Never>] = []
        for user in users ?? Array(state.waits.keys) {
            guard let waits = state.waits[user] else { continue }
            for (id, wait) in waits where wait.ended == nil && matches(user, wait) {
                if let waiter = wait.waiter {
                    taken.append(waiter)
                    remove(id, userKey: user, from: &state)
                } else {
                    state.waits[user]?[id]?.ended = outcome
                }
            }
        }
        return taken
    }

    // MARK: - Sessions

    /// The live session with this token's user id and hash, when memory can vouch for it.
    public func session(userID: String, hash: [UInt8]) -> Session? {
        let now = self.now()
        let found: Session?? = state.withLock { state in
            guard isAnswering(state, now: now) else { return .none }
            guard let kept = state.sessions.value(for: SessionKey(userID: userID, hash: hash)),
                state.record.sessionsChanged(userKey: kept.session.userKey) < kept.horizon, kept.session.expiresAt > Date()
            else { return .some(nil) }
            return .some(kept.session)
        }
        switch found {
        case .none: counters.sessionBypasses.increment()
        case .some(.none): counters.sessionMisses.increment()
        case .some(.some):
            counters.sessionHits.increment()
            sessionHits.add(1, ordering: .relaxed)
        }
        return found ?? nil
    }

    /// Keeps a live session the database found from a snapshot with `horizon`.
    public func remember(session: Session, userID: String, hash: [UInt8], horizon: Int64) {
        state.withLock { state in
            guard settings.enabled, case .answering = state.listening, state.record.sessionsChanged(userKey: session.userKey) < horizon
            else { return }
            state.sessions.set(KeptSession(session: session, horizon: horizon), for: SessionKey(userID: userID, hash: hash))
        }
    }

    // MARK: - Polls

    /// The answer to `userKey`'s poll of `token` in the channel `channelURL` (filtered by `filter`),
    /// when memory can give the one the database would; with `device`, only if that device's sync has
    /// nothing to record.
    public func quietPoll(
        userKey: Int64,
        channelURL: String,
        filter: CollectionFilter,
        token: SyncToken,
        device: DeviceReference?
    ) -> QuietPoll? {
        let now = self.now()
        let found: QuietPoll?? = state.withLock { state in
            guard isAnswering(state, now: now) else { return .none }
            guard let kept = state.polls.value(for: PollKey(userKey: userKey, channelURL: channelURL, filter: filter)),
                now - kept.storedAt <= settings.maximumAge
            else { return .some(nil) }
            let poll = kept.poll
            guard
                state.record.collectionsChanged(userKey: userKey, channelKey: poll.channel.key) < poll.snapshot.horizon,
                poll.answers(token, userKey: userKey)
            else { return .some(nil) }
            if let device {
                guard let kept = state.devices.value(for: DeviceKey(userKey: userKey, device: device)),
                    now - kept.syncedAt <= settings.deviceResolution,
                    state.record.devicesChanged(userKey: userKey) < kept.horizon
                else { return .some(nil) }
            }
            return .some(poll)
        }
        switch found {
        case .none:
            counters.pollBypasses.increment()
            pollBypasses.add(1, ordering: .relaxed)
        case .some(.none):
            counters.pollMisses.increment()
            pollMisses.add(1, ordering: .relaxed)
        case .some(.some):
            counters.pollHits.increment()
            pollHits.add(1, ordering: .relaxed)
        }
        return found ?? nil
    }

    /// Keeps the database's complete answer to `userKey`'s poll of `channelURL`.
    public func remember(poll: QuietPoll, userKey: Int64, channelURL: String) {
        let now = self.now()
        let count = state.withLock { state -> Int? in
            guard settings.enabled, case .answering = state.listening,
                state.record.collectionsChanged(userKey: userKey, channelKey: poll.channel.key) < poll.snapshot.horizon
            else { return nil }
            state.polls.set(KeptPoll(poll: poll, storedAt: now), for: PollKey(userKey: userKey, channelURL: channelURL, filter: poll.filter))
            return state.polls.count
        }
        if let count { counters.entries.record(count) }
    }

    /// Keeps that `device` of `userKey` synced with nothing left to record, as the database said from
    /// a snapshot with `horizon`.
    public func remember(syncedDevice device: DeviceReference, userKey: Int64, horizon: Int64) {
        let now = self.now()
        state.withLock { state in
            guard settings.enabled, case .answering = state.listening, state.record.devicesChanged(userKey: userKey) < horizon else { return }
            state.devices.set(KeptDevice(horizon: horizon, syncedAt: now), for: DeviceKey(userKey: userKey, device: device))
        }
    }

    // MARK: - Service

    /// Pings this process's listener every `pingInterval` (at once after a `.listening`), until shut
    /// down.
    public func run() async throws {
        guard settings.enabled else { return }
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.ping()
                await self.pingWake.wait(timeout: self.settings.pingInterval)
            }
        }
        endWaits()
    }

    /// Answers every waiting long poll with what it has, and lets none wait from now on.
    public func endWaits() {
        let waits = state.withLock { state in
            state.closed = true
            // A wait that has not suspended yet ends the same way when it does.
            return Self.takeWaits(from: &state, ending: .timedOut) { _, _ in true }
        }
        for wait in waits { wait.resume(returning: .timedOut) }
    }

    /// A service to run after the HTTP server in the `ServiceGroup` (so that it shuts down first):
    /// on graceful shutdown it answers every waiting long poll at once, which the HTTP server's own
    /// shutdown waits for.
    public var waitCloser: some Service { WaitCloser(notifier: self) }

    private struct WaitCloser: Service {
        let notifier: ChangeNotifier

        func run() async throws {
            try? await gracefulShutdown()
            notifier.endWaits()
        }
    }

    @discardableResult
    func ping() async -> Int64 {
        let sequence = state.withLock { state in
            defer { state.nextPing += 1 }
            state.pingsSent[state.nextPing] = self.now()
            // Pings never heard (a listener down for long) are forgotten past a few minutes' worth.
            if state.pingsSent.count > 256, let oldest = state.pingsSent.keys.min() { state.pingsSent[oldest] = nil }
            return state.nextPing
        }
        do {
            // Nothing to keep: its commit need not wait for the WAL to reach the disk.
            try await client.transaction(["SET LOCAL synchronous_commit = off", LiveHint.ping(node: node, sequence: sequence).query])
        } catch {
            logger.warning("could not ping the change listener", metadata: ["error": logger.describe(error)])
        }
        return sequence
    }
}
