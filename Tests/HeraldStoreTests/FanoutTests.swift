import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres
import Testing

/// Fan-out of sends at the store, with no HTTP in between: a targeted send writes exactly one copy per
/// listed user and counts it unread for each of them; an `audience: all` send is reached in batches
/// (`NotificationStore.fanOutNextBatch`, the step `FanoutService` runs) that give every user of the
/// time of the send exactly one copy, with progress that only moves forward; and until it is folded
/// (`foldNextBatch`, `sql/0012`) a broadcast is counted per channel with no per-user counter written,
/// while folding it moves no user's unread count.
@Suite("Fan-out")
struct FanoutTests {

    @Test func aTargetedSendMakesOneCopyPerListedUserAndCountsItUnreadForEachOfThem() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await StoreWorld.make(db, channels: [("feed", nil), ("other", nil)], users: ["u1", "u2", "u3", "u4"])
            let (u1, u3) = try (world.key("u1"), world.key("u3"))
            let sent = try await world.send("hello", to: .targets(["u1", "u3"]))
            #expect(sent.audienceSize == 2 && sent.recipientCount == 2)
            #expect(sent.fanoutState == .done)
            let copies = try await world.byUser("SELECT user_key, count(*) FROM notification_recipients GROUP BY user_key")
            #expect(copies == [u1: 1, u3: 1])
            #expect(try await world.counts() == ["u1": 1, "u1 badge": 1, "u2": 0, "u2 badge": 0, "u3": 1, "u3 badge": 1, "u4": 0, "u4 badge": 0])
            #expect(try await world.notifications.fanOutNextBatch(size: 10) == nil, "a targeted send leaves no fan-out to do")
            // A second send to one of them counts on top, for that user only.
            _ = try await world.send("again", to: .targets(["u1"]))
            #expect(try await world.unread("u1") == 2)
            #expect(try await world.unread("u3") == 1)
        }
    }

    @Test func aBroadcastReachesEveryUserOfItsTimeExactlyOnceAcrossBatchesWithProgressOnlyMovingForward() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            var world = try await StoreWorld.make(db, channels: [("feed", nil), ("other", nil)], users: (1...11).map { "u\($0)" })
            // u5 has variables of their own: their copy is made at send time, and the batches pass over it.
            let sent = try await world.send("all", to: .all, ownTitles: ["u5": "mine"])
            #expect(sent.fanoutState == .running && sent.audienceSize == 11 && sent.recipientCount == 1)
            let through = try await world.progress(of: sent.id).through
            #expect(through == world.users.values.max())
            // A user created after the send is not part of "every user at the time of the send".
            try await world.addUser("latecomer")
            #expect(try await world.unread("u5") == 1)
            #expect(try await world.unread("u1") == 0)
            var reached: Int64 = 0
            var recipients = sent.recipientCount
            var batches: [FanoutProgress] = []
            while let batch = try await world.notifications.fanOutNextBatch(size: 3) {
                batches.append(batch)
                let now = try await world.progress(of: sent.id)
                #expect(batch.notificationID == sent.id && now.reached > reached && now.reached <= through && now.through == through)
                reached = now.reached
                let stored = try #require(try await world.notifications.get(sent.id))
                #expect(stored.recipientCount == recipients + Int64(batch.inserted))
                #expect(stored.fanoutState == (batch.finished ? StoredNotification.FanoutState.done : .running))
                recipients = stored.recipientCount
                // Counted once for exactly the users reached so far (u5 from the send on).
                for (user, userKey) in world.users {
                    let expected: Int64 = userKey <= reached || user == "u5" ? 1 : 0
                    #expect(try await world.unread(user) == expected, "\(user) after batch \(batches.count)")
                }
            }
            #expect(batches.map(\.finished) == [false, false, false, true], "11 users in batches of 3")
            #expect(batches.map(\.inserted).reduce(0, +) == 10, "everyone but u5, who had a copy already")
            let copies = try await world.byUser("SELECT user_key, count(*) FROM notification_recipients GROUP BY user_key")
            let (latecomer, u5) = try (world.key("latecomer"), world.key("u5"))
            #expect(copies.count == 11 && copies.values.allSatisfy { $0 == 1 })
            #expect(copies[latecomer] == nil)
            #expect(recipients == 11)
            let own = try await db.client.query("SELECT data->>'title' FROM notification_recipients WHERE user_key = \(u5)")[0].decode(String.self)
            #expect(own == "mine", "the batches left u5's own copy as it was")
            #expect(try await world.notifications.fanOutNextBatch(size: 3) == nil)
        }
    }

    @Test func aBroadcastIsCountedPerChannelWithoutCounterWritesUntilFoldedAndFoldingMovesNoCount() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await StoreWorld.make(db, channels: [("feed", nil), ("other", nil)], users: (1...6).map { "u\($0)" })
            let feed = try world.channelKey("feed")
            let (u1, u2) = try (world.key("u1"), world.key("u2"))
            let sent = try await world.send("all", to: .all)
            #expect(try await world.notifications.fanOutNextBatch(size: 4)?.finished == false)
            #expect(try await world.notifications.foldNextBatch(size: 4) == nil, "nothing is folded while the fan-out runs")
            while try await world.notifications.fanOutNextBatch(size: 4) != nil {}
            let states = try await db.client.query("SELECT count(*) FROM channel_states WHERE channel_key = \(feed)")[0].decode(Int64.self)
            #expect(states == 0, "the fan-out wrote no per-user counter")
            for user in world.users.keys {
                #expect(try await world.unread(user) == 1, "\(user)")
                #expect(try await world.unread(user, in: "other") == 0, "\(user)")
            }
            // One user reads it before it is folded: counted down in their own state.
            #expect(try await world.collections.markRead(userKey: u2, channelKey: feed, ids: [sent.id]).state.unreadCount == 0)
            let before = try await world.counts()
            var folded: Int64 = 0
            var users = 0
            var last: FoldProgress?
            while let batch = try await world.notifications.foldNextBatch(size: 4) {
                let now = try await world.progress(of: sent.id)
                #expect(batch.notificationID == sent.id && now.folded > folded && now.folded <= now.through)
                folded = now.folded
                users += batch.users
                last = batch
                #expect(try await world.counts() == before, "folded through user key \(folded)")
            }
            #expect(last?.finished == true)
            #expect(users == 6)
            // Every user's counter now holds the broadcast (u2's less their read); nothing is counted per request.
            let adjustments = try await world.byUser("SELECT user_key, unread_adjustment FROM channel_states WHERE channel_key = \(feed)")
            #expect(adjustments.count == 6)
            #expect(adjustments[u2] == 0 && adjustments[u1] == 1)
            #expect(try await db.client.query("SELECT count(*) FROM notifications WHERE folded_through < fanout_through")[0].decode(Int64.self) == 0)
        }
    }
}

extension StoreWorld {
    /// Every user's unread count in `feed`, and their badge.
    fileprivate func counts() async throws -> [String: Int64] {
        var counts: [String: Int64] = [:]
        for (user, userKey) in users {
            counts[user] = try await unread(user)
            counts[user + " badge"] = try await collections.unread(userKey: userKey).total
        }
        return counts
    }

    /// A query's rows of (user key, number), as a dictionary.
    fileprivate func byUser(_ query: PostgresQuery) async throws -> [Int64: Int64] {
        try await Dictionary(uniqueKeysWithValues: db.client.query(query).map { try $0.decode((Int64, Int64).self) })
    }

    /// A broadcast's progress: the last user keys its fan-out reached and must reach, and its folding passed.
    fileprivate func progress(of id: Int64) async throws -> (reached: Int64, through: Int64, folded: Int64) {
        try await db.client.query("SELECT fanout_after, fanout_through, folded_through FROM notifications WHERE id = \(id)")[0]
            .decode((Int64, Int64, Int64).self)
    }
}
