import Foundation
import HeraldCore
import HeraldTesting
import Logging
import Postgres
import ServiceLifecycle
import Synchronization
import Testing

@testable import HeraldServices
@testable import HeraldStore

/// The change notifier's rules, driven event by event with a clock the test controls: what memory may
/// answer, and when it must not. (`MemoryAnswerTests` runs the same through HTTP with a real listener.)
@Suite("Change notifier")
struct ChangeNotifierTests {
    /// A clock that moves only when told to.
    final class TestClock: Sendable {
        private let instant = Mutex(ContinuousClock.now)
        var now: ContinuousClock.Instant { instant.withLock { $0 } }
        func advance(by duration: Duration) { instant.withLock { $0 += duration } }
    }

    static let channel = CollectionChannel(key: 3, url: "feed", kind: .feed, name: "Feed", coverURL: "", customType: "")

    static func snapshot(horizon: Int64, resetCount: Int32 = 0) -> CollectionStore.Snapshot {
        CollectionStore.Snapshot(
            state: ChannelState(unreadCount: 2, lastReadAt: nil, lastSeenAt: nil, resetCount: resetCount),
            badge: 5,
            horizon: horizon,
            nextXID: horizon + 10,
            compactedThrough: 0
        )
    }

    /// A poll the database answered from a snapshot with `horizon`, its token left just below it.
    static func poll(horizon: Int64) -> QuietPoll {
        QuietPoll(channel: channel, filter: .inbox, snapshot: snapshot(horizon: horizon), from: .through(xid: horizon - 1))
    }

    static func token(user: Int64 = 1, at xid: Int64) -> SyncToken {
        SyncToken(userKey: user, channelKey: channel.key, resetCount: 0, filter: .inbox, position: .through(xid: xid))
    }

    static func hint(_ hint: LiveHint, _ xid: Int64) -> PostgresListenerEvent {
        .notification(PostgresNotification(channel: LiveHint.channel, payload: hint.payload + " @\(xid)", senderPID: 1))
    }

    /// A notifier on `db` (for its pings), answering from transaction `floor` on.
    static func answering(
        _ db: TestDatabase,
        clock: TestClock,
        floor: Int64 = 100,
        configure: (inout ChangeNotifier.Settings) -> Void = { _ in }
    ) async throws -> ChangeNotifier {
        var settings = ChangeNotifier.Settings()
        configure(&settings)
        let notifier = ChangeNotifier(client: db.client, settings: settings, logger: Logger(label: "test.notifier")) { clock.now }
        notifier.observe(.listening(backendPID: 1))
        #expect(!notifier.isAnswering, "nothing before a ping comes back")
        let sequence = await notifier.ping()
        notifier.observe(hint(.ping(node: notifier.node, sequence: sequence), floor))
        #expect(notifier.isAnswering)
        return notifier
    }

    func quiet(_ notifier: ChangeNotifier, user: Int64 = 1, token: SyncToken, device: DeviceReference? = nil) -> Bool {
        notifier.quietPoll(userKey: user, channelURL: "feed", filter: .inbox, token: token, device: device) != nil
    }

    @Test func anAnswerHoldsUntilAHintAtOrAboveItsHorizonNamesItsUser() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let notifier = try await Self.answering(db, clock: TestClock())
            notifier.remember(poll: Self.poll(horizon: 150), userKey: 1, channelURL: "feed")
            #expect(quiet(notifier, token: Self.token(at: 149)))
            // A token behind the answer's may have changes between: the database answers it.
            #expect(!quiet(notifier, token: Self.token(at: 120)))
            // Another user's token, or another user asking: never.
            #expect(!quiet(notifier, token: Self.token(user: 2, at: 149)))
            #expect(!quiet(notifier, user: 2, token: Self.token(user: 2, at: 149)))
            // A change committed before the snapshot's horizon was in the answer: it stays.
            notifier.observe(Self.hint(.notification(.created, id: 9, channelKey: 3, recipients: .users([1])), 140))
            #expect(quiet(notifier, token: Self.token(at: 149)))
            // Another user's change, or another channel's definition: it stays.
            notifier.observe(Self.hint(.channelState(userKey: 2, channelKey: 3), 160))
            notifier.observe(Self.hint(.channelChanged(channelKey: 4), 161))
            #expect(quiet(notifier, token: Self.token(at: 149)))
            // A change of the user's at or above the horizon — in any channel: the badge counts it.
            notifier.observe(Self.hint(.channelState(userKey: 1, channelKey: 8), 150))
            #expect(!quiet(notifier, token: Self.token(at: 149)))
        }
    }

    @Test func aChangeHeardBeforeTheAnswerIsKeptStillRefusesIt() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let notifier = try await Self.answering(db, clock: TestClock())
            // The population race: the change committed after the answer's snapshot was taken (so at or
            // above its horizon), and its hint arrived before the answer was kept.
            notifier.observe(Self.hint(.notification(.updated, id: 9, channelKey: 3, recipients: .range(after: 0, through: 10)), 155))
            notifier.remember(poll: Self.poll(horizon: 150), userKey: 1, channelURL: "feed")
            #expect(!quiet(notifier, token: Self.token(at: 149)))
            // A snapshot that saw it answers.
            notifier.remember(poll: Self.poll(horizon: 156), userKey: 1, channelURL: "feed")
            #expect(quiet(notifier, token: Self.token(at: 155)))
            // Nothing below the floor (the first ping after `LISTEN`): it may have committed unheard.
            notifier.remember(poll: Self.poll(horizon: 90), userKey: 5, channelURL: "feed")
            #expect(!quiet(notifier, user: 5, token: Self.token(user: 5, at: 89)))
        }
    }

    @Test func anAnswerFromMemoryIsRefusedToTokensTheDatabaseWouldRefuse() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let notifier = try await Self.answering(db, clock: TestClock())
            notifier.remember(poll: Self.poll(horizon: 150), userKey: 1, channelURL: "feed")
            var reset = Self.token(at: 149)
            reset.resetCount = 1
            #expect(!quiet(notifier, token: reset))
            let filtered = SyncToken(
                userKey: 1,
                channelKey: 3,
                resetCount: 0,
                filter: CollectionFilter(category: "news"),
                position: .through(xid: 149)
            )
            #expect(!quiet(notifier, token: filtered))
            let archived = SyncToken(
                userKey: 1,
                channelKey: 3,
                resetCount: 0,
                filter: CollectionFilter(status: .archived),
                position: .through(xid: 149)
            )
            #expect(!quiet(notifier, token: archived), "another status's collection")
            let otherChannel = SyncToken(userKey: 1, channelKey: 4, resetCount: 0, filter: .inbox, position: .through(xid: 149))
            #expect(!quiet(notifier, token: otherChannel))
            #expect(!quiet(notifier, token: Self.token(at: 10_000)), "a token from beyond this database")
        }
    }

    @Test func sessionsHoldUntilRevokedOrExpired() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let notifier = try await Self.answering(db, clock: TestClock())
            let hash: [UInt8] = [1, 2, 3]
            let live = ChangeNotifier.Session(userKey: 1, expiresAt: Date().addingTimeInterval(3600))
            notifier.remember(session: live, userID: "u1", hash: hash, horizon: 150)
            #expect(notifier.session(userID: "u1", hash: hash)?.userKey == 1)
            #expect(notifier.session(userID: "u1", hash: [9]) == nil)
            #expect(notifier.session(userID: "u2", hash: hash) == nil)
            // Other changes of the user's leave the session alone.
            notifier.observe(Self.hint(.channelState(userKey: 1, channelKey: 3), 170))
            #expect(notifier.session(userID: "u1", hash: hash) != nil)
            notifier.observe(Self.hint(.sessionsRevoked(userKey: 1), 160))
            #expect(notifier.session(userID: "u1", hash: hash) == nil)
            // A session read before the revocation, kept after it was heard: refused.
            notifier.remember(session: live, userID: "u1", hash: hash, horizon: 155)
            #expect(notifier.session(userID: "u1", hash: hash) == nil)
            // Expired by the clock.
            let expired = ChangeNotifier.Session(userKey: 2, expiresAt: Date().addingTimeInterval(-1))
            notifier.remember(session: expired, userID: "u2", hash: hash, horizon: 200)
            #expect(notifier.session(userID: "u2", hash: hash) == nil)
        }
    }

    @Test func aSyncNamingADeviceNeedsTheDeviceKnownSyncedLately() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let clock = TestClock()
            let notifier = try await Self.answering(db, clock: clock)
            notifier.remember(poll: Self.poll(horizon: 150), userKey: 1, channelURL: "feed")
            let device = DeviceReference.id(7)
            #expect(!quiet(notifier, token: Self.token(at: 149), device: device), "not known synced")
            notifier.remember(syncedDevice: device, userKey: 1, horizon: 150)
            #expect(quiet(notifier, token: Self.token(at: 149), device: device))
            #expect(!quiet(notifier, token: Self.token(at: 149), device: .id(8)))
            // A push recorded as delivered to one of the user's devices, or a device removed: the next
            // sync naming it must write.
            notifier.observe(Self.hint(.devicesChanged(userKeys: [1]), 151))
            #expect(!quiet(notifier, token: Self.token(at: 149), device: device))
            #expect(quiet(notifier, token: Self.token(at: 149)), "the collection itself did not change")
            notifier.remember(syncedDevice: device, userKey: 1, horizon: 152)
            #expect(quiet(notifier, token: Self.token(at: 149), device: device))
            // Its last sync is recorded at least this often.
            clock.advance(by: notifier.settings.deviceResolution + .seconds(1))
            #expect(!quiet(notifier, token: Self.token(at: 149), device: device))
        }
    }

    @Test func nothingIsAnsweredWhileTheListenerIsDownRestartingOrUnproven() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let clock = TestClock()
            let notifier = try await Self.answering(db, clock: clock)
            notifier.remember(poll: Self.poll(horizon: 150), userKey: 1, channelURL: "feed")
            #expect(quiet(notifier, token: Self.token(at: 149)))
            // The newest ping heard is older than the bound: the listener may be lagging or cut off.
            clock.advance(by: notifier.settings.staleAfter + .milliseconds(1))
            #expect(!notifier.isAnswering)
            #expect(!quiet(notifier, token: Self.token(at: 149)))
            let second = await notifier.ping()
            notifier.observe(Self.hint(.ping(node: notifier.node, sequence: second), 200))
            #expect(quiet(notifier, token: Self.token(at: 149)))
            // Another process's ping proves nothing about this one's listener.
            clock.advance(by: notifier.settings.staleAfter + .milliseconds(1))
            notifier.observe(Self.hint(.ping(node: notifier.node &+ 1, sequence: second + 1), 201))
            #expect(!notifier.isAnswering)
            let third = await notifier.ping()
            notifier.observe(Self.hint(.ping(node: notifier.node, sequence: third), 202))
            #expect(notifier.isAnswering)

            notifier.observe(.disconnected)
            #expect(!quiet(notifier, token: Self.token(at: 149)))
            let before = notifier.tallies
            // Back, with everything forgotten: hints sent meanwhile are lost.
            let early = await notifier.ping()
            notifier.observe(.listening(backendPID: 2))
            let fourth = await notifier.ping()
            // A ping sent before the reconnect proves nothing.
            notifier.observe(Self.hint(.ping(node: notifier.node, sequence: early), 203))
            #expect(!notifier.isAnswering)
            notifier.observe(Self.hint(.ping(node: notifier.node, sequence: fourth), 210))
            #expect(notifier.isAnswering)
            #expect(!quiet(notifier, token: Self.token(at: 149)), "the answer kept before is gone")
            #expect(notifier.tallies.pollBypasses == before.pollBypasses)
            #expect(notifier.tallies.pollMisses == before.pollMisses + 1)

            // A hint it cannot read (another version's, without its transaction id): start over.
            notifier.remember(poll: Self.poll(horizon: 250), userKey: 1, channelURL: "feed")
            #expect(quiet(notifier, token: Self.token(at: 249)))
            notifier.observe(.notification(PostgresNotification(channel: LiveHint.channel, payload: "s 1 3", senderPID: 1)))
            #expect(!notifier.isAnswering)
            let sequence = await notifier.ping()
            notifier.observe(Self.hint(.ping(node: notifier.node, sequence: sequence), 260))
            #expect(!quiet(notifier, token: Self.token(at: 249)))
        }
    }

    @Test func aWaitEndsOnAChangeOfItsOwnAndNoOther() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let notifier = try await Self.answering(db, clock: TestClock())
            let waiting = Task { await notifier.waitForChange(userKey: 1, channelKey: 3, horizon: 150, timeout: .seconds(60)) }
            try await waitUntil("the poll to wait") { notifier.waiting == 1 }
            // Another user's change, or another channel's definition, leaves it waiting.
            notifier.observe(Self.hint(.channelState(userKey: 2, channelKey: 3), 160))
            notifier.observe(Self.hint(.channelChanged(channelKey: 4), 161))
            notifier.observe(Self.hint(.devicesChanged(userKeys: [1]), 162))
            #expect(notifier.waiting == 1)
            // One of the user's, in any channel (the badge), ends it.
            notifier.observe(Self.hint(.notification(.created, id: 5, channelKey: 8, recipients: .range(after: 0, through: 5)), 163))
            #expect(await waiting.value == .changed)
            #expect(notifier.waiting == 0)

            // A list's wait ends on any channel's definition.
            let list = Task { await notifier.waitForChange(userKey: 1, channelKey: nil, horizon: 170, timeout: .seconds(60)) }
            try await waitUntil("the list to wait") { notifier.waiting == 1 }
            notifier.observe(Self.hint(.channelChanged(channelKey: 4), 171))
            #expect(await list.value == .changed)
        }
    }

    @Test func aWaitEndsAtOnceWhenItCannotBeTrusted() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let clock = TestClock()
            let notifier = try await Self.answering(db, clock: clock) { $0.maximumWaitsPerUser = 1 }
            // A change heard since the answer's snapshot: nothing to wait for.
            notifier.observe(Self.hint(.channelState(userKey: 1, channelKey: 3), 155))
            #expect(await notifier.waitForChange(userKey: 1, channelKey: 3, horizon: 150, timeout: .seconds(60)) == .changed)
            // Past the per-user cap: answer at once.
            let first = Task { await notifier.waitForChange(userKey: 1, channelKey: 3, horizon: 160, timeout: .seconds(60)) }
            try await waitUntil("the poll to wait") { notifier.waiting == 1 }
            #expect(await notifier.waitForChange(userKey: 1, channelKey: 3, horizon: 160, timeout: .seconds(60)) == .refused)
            // The listener lost: every wait looks again, and none starts while nothing is proven.
            notifier.observe(.disconnected)
            #expect(await first.value == .changed)
            #expect(await notifier.waitForChange(userKey: 1, channelKey: 3, horizon: 160, timeout: .seconds(60)) == .refused)
            // Its time runs out.
            notifier.observe(.listening(backendPID: 2))
            let sequence = await notifier.ping()
            notifier.observe(Self.hint(.ping(node: notifier.node, sequence: sequence), 300))
            #expect(await notifier.waitForChange(userKey: 1, channelKey: 3, horizon: 310, timeout: .milliseconds(20)) == .timedOut)
            #expect(notifier.waiting == 0)
        }
    }

    @Test func shuttingDownAnswersEveryWait() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let notifier = try await Self.answering(db, clock: TestClock())
            let group = ServiceGroup(services: [notifier], logger: Logger(label: "test.notifier"))
            let running = Task { try await group.run() }
            let waiting = Task { await notifier.waitForChange(userKey: 1, channelKey: 3, horizon: 150, timeout: .seconds(60)) }
            try await waitUntil("the poll to wait") { notifier.waiting == 1 }
            await group.triggerGracefulShutdown()
            #expect(await waiting.value == .timedOut)
            try await running.value
            #expect(await notifier.waitForChange(userKey: 2, channelKey: 3, horizon: 150, timeout: .seconds(60)) == .refused)
        }
    }

    @Test func keptAnswersAgeOutAndStayInBounds() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let clock = TestClock()
            let notifier = try await Self.answering(db, clock: clock) { $0.capacity = 100 }
            notifier.remember(poll: Self.poll(horizon: 150), userKey: 1, channelURL: "feed")
            clock.advance(by: notifier.settings.maximumAge + .seconds(1))
            // Proven again, so only the age refuses it.
            let sequence = await notifier.ping()
            notifier.observe(Self.hint(.ping(node: notifier.node, sequence: sequence), 300))
            #expect(!quiet(notifier, token: Self.token(at: 149)))
            for user in Int64(1)...1_000 {
                notifier.remember(poll: Self.poll(horizon: 400), userKey: user, channelURL: "feed")
            }
            let kept = (Int64(1)...1_000).filter { quiet(notifier, user: $0, token: Self.token(user: $0, at: 399)) }.count
            #expect(kept > 0 && kept <= 100)
        }
    }
}
