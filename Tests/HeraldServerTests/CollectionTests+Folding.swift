import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres
import Testing

/// Folding finished broadcasts into the per-user counters (`NotificationStore.foldNextBatch`): no
/// count a user can see moves while it happens, and afterwards the per-request broadcast count has
/// nothing left to count.
extension CollectionTests {
    /// Everything that shows a user's unread counts, for every user.
    struct CountsView: Equatable {
        var unread: [String: [String: Int64]] = [:]
        var totals: [String: Int64] = [:]
        var channelOrder: [String: [String]] = [:]
        var summaries: [String: [String: Int64]] = [:]
    }

    /// Sends a broadcast (`audience: "all"`) to `channel`, with the given users' own variables, and
    /// returns its id; nothing is fanned out yet.
    static func broadcast(_ world: World, _ title: String, channel: String, ownVariablesFor: [String] = []) async throws -> Int64 {
        let template = try #require(try await TemplateStore(client: world.client).get("plain")).template
        let own = Dictionary(uniqueKeysWithValues: ownVariablesFor.map { ($0, ["title": JSONValue.string("\(title) for \($0)")]) })
        let content = try template.renderNotification(variables: ["title": .string(title)], userVariables: own)
        let draft = NotificationDraft(
            channelURL: channel,
            templateKey: "plain",
            templateVersion: 1,
            variables: ["title": .string(title)],
            content: content,
            category: "news",
            tags: [],
            eventDeadline: nil,
            push: PushOptions(),
            audience: .all
        )
        guard
            case .created(let stored, _, _) = try await world.notifications.send(
                draft,
                idempotency: nil,
                respond: { _ in StoredResponse(status: 202, body: []) }
            )
        else {
            throw CancellationError()
        }
        return stored.id
    }

    /// Returns once a session of the test's database waits for a lock (how a test knows that the
    /// statement it started is blocked behind a transaction it holds open).
    static func untilSomethingWaitsForALock(_ db: TestDatabase) async throws {
        try await withTimeout(.seconds(20), what: "a statement to wait for a lock") {
            while try await db.client.query(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).first!.decode(Int.self) == 0 {
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    @Test func foldingBroadcastsKeepsEveryCountAndEmptiesThePerRequestCount() async throws {
        try await TestPostgres.withDatabase(maximumConnections: 4, cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let users = ["u1", "u2", "u3", "u4", "u5"]
            let world = try await world(db, users: users)
            for url in ["chat", "chat2"] {
                _ = try await ChannelStore(client: db.client).put(HeraldCore.Channel(url: url, kind: .chat, name: url))
            }
            let collections = CollectionStore(client: db.client)
            var keys: [String: Int64] = [:]
            for user in users {
                let key: Int64 = try #require(try await UserStore(client: db.client).key(user))
                keys[user] = key
            }
            func broadcast(_ title: String, channel: String, ownVariablesFor: [String] = []) async throws -> Int64 {
                try await Self.broadcast(world, title, channel: channel, ownVariablesFor: ownVariablesFor)
            }
            func view() async throws -> CountsView {
                var view = CountsView()
                for user in users {
                    let unread = try await collections.unread(userKey: keys[user]!)
                    view.unread[user] = Dictionary(uniqueKeysWithValues: unread.channels.map { ($0.url, $0.unread) })
                    view.totals[user] = unread.total
                    view.channelOrder[user] = try await collections.channelList(userKey: keys[user]!).entries.map(\.channel.url)
                }
                let summaries = try await PushStore(client: db.client).refreshSummaries(userKeys: users.map { keys[$0]! })
                for user in users {
                    view.summaries[user] = Dictionary(uniqueKeysWithValues: (summaries[keys[user]!] ?? []).map { ($0.url, $0.unread) })
                }
                return view
            }
            /// The count a live event (`liveState`) and the answer to a mark (`markSeen`) carry agree
            /// with the badge's, channel by channel. Marks only where the user has a state (a mark
            /// would create one, which the channel list orders by), and puts back whether the channel
            /// was opened (a mark opens it, which would keep it listed later in the test).
            func expectStatesAgree(with view: CountsView, _ comment: Comment) async throws {
                for (user, channels) in view.unread {
                    for (url, unread) in channels {
                        let channel = try #require(try await collections.channel(url)).key
                        #expect(
                            try await collections.liveState(userKey: keys[user]!, channelKey: channel).state.unreadCount == unread,
                            "\(comment) \(user) \(url)"
                        )
                        let opened = try await db.client.query(
                            "SELECT opened FROM channel_states WHERE user_key = \(keys[user]!) AND channel_key = \(channel)"
                        ).first?.decode(Bool.self)
                        if let opened {
                            #expect(
                                try await collections.markSeen(userKey: keys[user]!, channelKey: channel, at: Date()).state.unreadCount == unread,
                                "\(comment) \(user) \(url)"
                            )
                            try await db.client.query(
                                "UPDATE channel_states SET opened = \(opened) WHERE user_key = \(keys[user]!) AND channel_key = \(channel)"
                            )
                        }
                    }
                }
            }
            func perRequestCount() async throws -> Int64 {
                try await db.client.query(
                    "SELECT coalesce(sum(herald_broadcasts_reaching(u.key, c.key)), 0)::int8 FROM users u CROSS JOIN channels c"
                ).first!.decode(Int64.self)
            }

            // Chat broadcasts in two channels (the channel list orders chats by their latest activity,
            // which folding must keep), a feed broadcast with one user's own copy made at send time,
            // all fanned out.
            let chatOld = try await broadcast("chat 1", channel: "chat")
            _ = try await broadcast("other chat", channel: "chat2")
            try await world.send("targeted", to: ["u2", "u3"], channel: "other")
            let feed = try await broadcast("feed 1", channel: "feed", ownVariablesFor: ["u4"])
            let chatNew = try await broadcast("chat 2", channel: "chat")
            while try await world.notifications.fanOutNextBatch(size: 2) != nil {}
            // Reads and a removal before any folding.
            let feedChannel = try #require(try await collections.channel("feed")).key
            let chatChannel = try #require(try await collections.channel("chat")).key
            _ = try await collections.markRead(userKey: keys["u1"]!, channelKey: feedChannel, ids: [feed])
            _ = try await collections.markRead(userKey: keys["u2"]!, channelKey: chatChannel, ids: [chatOld])
            try await collections.reset(userKey: keys["u5"]!, channelKey: chatChannel)

            let before = try await view()
            try await expectStatesAgree(with: before, "before folding:")
            #expect(before.totals["u3"] == 5)
            #expect(before.channelOrder["u3"] == ["chat", "chat2", "feed", "other"])
            #expect(before.unread["u1"]?["feed"] == 0 && before.unread["u2"]?["chat"] == 1)
            // u5's chat copies were reset away and u5 never opened the chat: it is not in u5's list.
            #expect(before.unread["u5"]?["chat"] == nil && before.unread["u5"]?["chat2"] == 1)
            // Four broadcasts reached five users; reads and the reset count down the users' states instead.
            #expect(try await perRequestCount() == 4 * 5)

            // Part way: one batch of two users of the first broadcast.
            let first = try #require(try await world.notifications.foldNextBatch(size: 2))
            #expect(first.notificationID == chatOld && first.users == 2 && !first.finished)
            #expect(try await view() == before)
            try await expectStatesAgree(with: before, "part way:")
            // A read between batches, then the rest.
            _ = try await collections.markRead(userKey: keys["u4"]!, channelKey: chatChannel, ids: nil)
            var expected = before
            expected.unread["u4"]?["chat"] = 0
            expected.totals["u4"]! -= 2
            expected.summaries["u4"]?["chat"] = 0
            var batches = 1
            while let progress = try await world.notifications.foldNextBatch(size: 2) {
                batches += 1
                #expect(try await view() == expected, "after batch \(batches) (notification \(progress.notificationID))")
            }
            #expect(batches == 12)  // four broadcasts, five users, two per batch
            #expect(try await perRequestCount() == 0)
            let unfolded = try await db.client.query(
                "SELECT count(*) FROM notifications WHERE audience = 'all' AND deleted_at IS NULL AND folded_through < fanout_through"
            ).first!.decode(Int.self)
            #expect(unfolded == 0)
            #expect(try await view() == expected)
            try await expectStatesAgree(with: expected, "folded:")

            // Deleting folded broadcasts takes them out of the counters of those who had not read them.
            #expect(try await world.notifications.delete(chatNew))
            #expect(try await world.notifications.delete(feed))
            let after = try await view()
            for user in users {
                // u4 marked the chat read (so opened it), u5's copies were reset away (not listed).
                let expectedChat: Int64? = user == "u5" ? nil : (user == "u4" || user == "u2" ? 0 : 1)
                #expect(after.unread[user]?["chat"] == expectedChat, "\(user)")
                // The feed broadcast is gone: only u1, who marked it read (so opened the feed), still lists it.
                #expect(after.unread[user]?["feed"] == (user == "u1" ? 0 : nil), "\(user)")
            }
            try await Self.expectUnreadCountsMatchCopies(db)
            // A new broadcast after all that is counted per request until it is folded too.
            _ = try await broadcast("chat 3", channel: "chat")
            while try await world.notifications.fanOutNextBatch(size: 5) != nil {}
            #expect(try await perRequestCount() == 5)
            while try await world.notifications.foldNextBatch(size: 5) != nil {}
            #expect(try await perRequestCount() == 0)
            #expect(try await view().unread.values.allSatisfy { $0["chat"] != nil })
        }
    }

    @Test func aMarkThatWaitsForAFoldingBatchAnswersTheCountAfterIt() async throws {
        try await TestPostgres.withDatabase(maximumConnections: 4, cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2"])
            let collections = CollectionStore(client: db.client)
            let broadcast = try await Self.broadcast(world, "all", channel: "feed")
            while try await world.notifications.fanOutNextBatch(size: 10) != nil {}
            let user = try #require(try await UserStore(client: db.client).key("u1"))
            let channel = try #require(try await collections.channel("feed")).key
            try await collections.open(userKey: user, channelKey: channel)
            #expect(try await collections.markSeen(userKey: user, channelKey: channel, at: Date()).state.unreadCount == 1)

            // A folding batch for u1, held open after its writes (the same two writes as foldNextBatch)…
            try await db.client.withConnection { held in
                try await held.query("BEGIN")
                try await held.query("SELECT 1 FROM notifications WHERE id = \(broadcast) FOR UPDATE")
                try await held.query(
                    "UPDATE channel_states SET unread_adjustment = unread_adjustment + 1 WHERE user_key = \(user) AND channel_key = \(channel)"
                )
                try await held.query("UPDATE notifications SET folded_through = \(user) WHERE id = \(broadcast)")
                // …while a mark waits for u1's channel state; once the database shows it waiting, the batch commits.
                async let seen = collections.markSeen(userKey: user, channelKey: channel, at: Date())
                try await Self.untilSomethingWaitsForALock(db)
                try await held.query("COMMIT")
                // The answer counts the broadcast once: in the counter now, no longer per request.
                #expect(try await seen.state.unreadCount == 1)
            }
            try await Self.expectUnreadCountsMatchCopies(db)
        }
    }

    @Test func deletingAChannelWaitsForAFoldingBatchAndLeavesNoCounter() async throws {
        try await TestPostgres.withDatabase(maximumConnections: 4, cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2"])
            let broadcast = try await Self.broadcast(world, "all", channel: "feed")
            while try await world.notifications.fanOutNextBatch(size: 10) != nil {}
            let collections = CollectionStore(client: db.client)
            let user = try #require(try await UserStore(client: db.client).key("u1"))
            let channel = try #require(try await collections.channel("feed")).key

            // A folding batch for u1 (a channel state it creates), held open after its writes…
            try await db.client.withConnection { held in
                try await held.query("BEGIN")
                try await held.query("SELECT 1 FROM notifications WHERE id = \(broadcast) FOR UPDATE")
                try await held.query("INSERT INTO channel_states (user_key, channel_key, unread_adjustment) VALUES (\(user), \(channel), 1)")
                try await held.query("UPDATE notifications SET folded_through = \(user) WHERE id = \(broadcast)")
                // …while the channel is deleted; once the database shows the delete waiting, the batch commits.
                async let deleted = ChannelStore(client: db.client).delete("feed")
                try await Self.untilSomethingWaitsForALock(db)
                try await held.query("COMMIT")
                #expect(try await deleted)
            }
            // Nothing of the channel is left, so no badge counts it.
            let left = try await db.client.query(
                """
                SELECT (SELECT count(*) FROM channel_states WHERE channel_key = \(channel)),
                    (SELECT count(*) FROM notifications WHERE channel_key = \(channel)),
                    (SELECT count(*) FROM notification_recipients WHERE channel_key = \(channel))
                """
            ).first!.decode((Int, Int, Int).self)
            #expect(left == (0, 0, 0))
            #expect(try await collections.unread(userKey: user).total == 0)
        }
    }
}
