import Foundation
import HeraldTesting
import NIOHTTP1
import Testing

@testable import HeraldClient

extension ClientSuites {
    /// A model test of the client library: seeded random histories of sends (two channels, two
    /// categories, alone or with another user), edits, deletions, reads here and on another device,
    /// archives, unarchives, unread marks, the user's own deletions and buttons pressed here and there (the model keeps
    /// collections of the inbox, the archive and the unread ones),
    /// resets, older pages, the stream dropped and reopened, silent pushes handed over, the client
    /// restarted from its cache, the user signed out and in again, the network dropping and returning,
    /// and the app flipping between background and foreground. At every quiet point — nothing more is being sent, the client has
    /// refreshed — every collection the client holds equals the newest part of a fresh load (all of it
    /// once nothing older is left to page in), state and unread counts included.
    @Suite("Client model")
    @MainActor
    struct ClientModelTests {
        /// The collections the model keeps open.
        static let collections: [(channel: String, category: String?, status: InboxStatus)] = [
            ("feed", nil, .inbox), ("feed", "promo", .inbox), ("chat", nil, .inbox), ("feed", nil, .archived), ("feed", nil, .unread),
        ]

        @Test(arguments: [UInt64(20_261_124), 3])
        func randomHistoriesEndEveryQuietPointEqualToAFreshLoad(seed: UInt64) async throws {
            try await ServerWorld.with { world in
                var random = SplitMix64(seed: seed)
                let directory = CacheDirectory()
                defer { directory.remove() }
                let cache = directory.url
                let device = Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
                let deviceHex = device.map { String(format: "%02x", $0) }.joined()

                var client = try await world.client("u1", cache: cache)
                let platform = TestPlatform()
                client.followLifecycle(of: platform)
                try await client.registerDevice(token: device, environment: .sandbox, topic: ServerWorld.topic)
                var held = try await open(client)
                let tablet = try await world.client("u1")
                var sent: [String] = []
                var deleted: Set<String> = []
                var pushesHandled = 0
                var quietPoints = 0
                var counts: [String: Int] = [:]
                var history: [String] = []

                for step in 0..<1_000 {
                    let roll = Int.random(in: 0..<100, using: &random)
                    let live = sent.filter { !deleted.contains($0) }
                    switch roll {
                    case 0..<30:
                        let (channel, category) = [("feed", nil), ("feed", "promo"), ("chat", nil)][Int.random(in: 0..<3, using: &random)]
                        let users = Bool.random(using: &random) ? ["u1"] : ["u1", "u2"]
                        sent.append(try await world.send("s\(step)", to: users, channel: channel, category: category))
                        counts["send", default: 0] += 1
                        history.append("\(step) send \(sent.last!) \(channel)/\(category ?? "-") \(users)")
                    case 30..<40 where !live.isEmpty:
                        let id = live.randomElement(using: &random)!
                        try await world.admin(.PATCH, "/v1/notifications/\(id)", #"{"variables":{"title":"edit\#(step)"}}"#)
                        counts["edit", default: 0] += 1
                        history.append("\(step) edit \(id)")
                    case 40..<47 where !live.isEmpty:
                        let id = live.randomElement(using: &random)!
                        try await world.admin(.DELETE, "/v1/notifications/\(id)")
                        deleted.insert(id)
                        counts["delete", default: 0] += 1
                        history.append("\(step) delete \(id)")
                    case 47..<55:
                        // A read on another device of the same user, or here; all, or a few ids.
                        let reader = Bool.random(using: &random) ? tablet : client
                        let (channel, category, status) = Self.collections.randomElement(using: &random)!
                        let collection = await reader.collection(channelURL: channel, category: category, status: status)
                        try await collection.refresh()
                        let ids = Array(collection.notifications.map(\.id).shuffled(using: &random).prefix(3))
                        try await collection.markRead(Bool.random(using: &random) || ids.isEmpty ? nil : ids)
                        counts["read", default: 0] += 1
                        history.append("\(step) read \(reader === tablet ? "tablet" : "client") \(channel)/\(category ?? "-")")
                    case 55..<57:
                        let channel = Bool.random(using: &random) ? "feed" : "chat"
                        try await world.admin(.POST, "/v1/users/u1/channels/\(channel)/reset")
                        counts["reset", default: 0] += 1
                        history.append("\(step) reset \(channel)")
                    case 57..<62:
                        if client.stream == nil {
                            client.connect()
                            try await eventually("the stream to open") { client.connectionState == .connected }
                        } else {
                            await client.disconnect()
                        }
                        counts["stream", default: 0] += 1
                        history.append("\(step) stream \(client.stream == nil ? "closed" : "opened")")
                    case 62..<70:
                        // Hand over the refresh pushes that came (only while the stream is closed).
                        let pushes = world.mock.requests.filter { $0.deviceToken == deviceHex && $0.status == 200 }
                        for push in pushes.dropFirst(pushesHandled) {
                            let userInfo = try #require(try JSONSerialization.jsonObject(with: Data(push.body)) as? [String: Any])
                            #expect(await client.handleRemoteNotification(userInfo) != .failed)
                        }
                        pushesHandled = pushes.count
                        counts["push", default: 0] += 1
                        history.append("\(step) pushes until \(pushesHandled)")
                    case 70..<74:
                        // A cold start: the new client shows what was saved before any request.
                        await client.disconnect()
                        client.stopFollowingLifecycle()
                        let before = held.map(\.notifications)
                        client = try await world.client("u1", cache: cache)
                        // Opened before the client follows the app's life: in the foreground that
                        // starts a refresh, which may bring what was sent since.
                        held = try await open(client, refresh: false)
                        if held.map(\.notifications) != before {
                            Issue.record(
                                "step \(step): the cache did not give back what was held: \(held.map { $0.notifications.map(\.id) }) for \(before.map { $0.map(\.id) })\n\(history.suffix(30).joined(separator: "\n"))"
                            )
                        }
                        client.followLifecycle(of: platform)
                        try await client.registerDevice(token: device, environment: .sandbox, topic: ServerWorld.topic)
                        counts["restart", default: 0] += 1
                        history.append("\(step) restart")
                    case 74..<80:
                        if let collection = held.randomElement(using: &random) { try await collection.loadPrevious() }
                        counts["page", default: 0] += 1
                        history.append("\(step) page")
                    case 80..<83:
                        // Signed out: nothing of the user is left in sight or on disk; signed in again,
                        // the device the app handed over is registered again and everything reloads.
                        await client.signOut()
                        if !held.allSatisfy({ $0.notifications.isEmpty }) || client.unread != UnreadCounts() || !client.channels.feed.isEmpty {
                            Issue.record("step \(step): the signed-out client still shows the user's state")
                        }
                        #expect(!FileManager.default.fileExists(atPath: try #require(client.configuration.cacheURL(for: "u1")).path))
                        await client.signIn(userID: "u1", sessionToken: try #require(world.sessions["u1"]))
                        #expect(client.deviceToken == deviceHex)
                        held = try await open(client)
                        counts["signout", default: 0] += 1
                        history.append("\(step) sign out and in")
                    case 83..<88:
                        // The network drops and returns: the stream (if wanted) reconnects at once, and
                        // everything refreshes.
                        platform.send(.network(available: false))
                        platform.send(.network(available: true))
                        counts["network", default: 0] += 1
                        history.append("\(step) network dropped and back")
                    case 88..<94:
                        // The app goes to the background and back, at once or after the stream closed.
                        platform.send(.didEnterBackground)
                        if Bool.random(using: &random) {
                            try await eventually("the stream to close in the background") {
                                client.stream == nil && platform.backgroundTasksOpen == 0
                            }
                        }
                        platform.send(.didBecomeActive)
                        try await eventually("the stream back in the foreground") { client.connectionState == .connected }
                        counts["flip", default: 0] += 1
                        history.append("\(step) background and foreground")
                    case 94..<100:
                        // The user's own states, here or on the other device, of what a collection shows.
                        let changer = Bool.random(using: &random) ? tablet : client
                        let (channel, category, status) = Self.collections.randomElement(using: &random)!
                        let collection = await changer.collection(channelURL: channel, category: category, status: status)
                        try await collection.refresh()
                        let ids = Array(collection.notifications.map(\.id).shuffled(using: &random).prefix(2))
                        let what: String
                        switch (Int.random(in: 0..<14, using: &random), ids.isEmpty) {
                        case (12..<14, false):
                            let action = Bool.random(using: &random) ? "ack" : "open"
                            what = "press \(action)"
                            do {
                                try await collection.press(action, on: ids[0])
                            } catch HeraldClientError.server(status: 404, code: _, message: _) {
                                // Deleted since the collection synced.
                            }
                        case (0..<4, false):
                            what = "archive"
                            try await collection.archive(ids)
                        case (4..<6, false):
                            what = "unarchive"
                            try await collection.unarchive(ids)
                        case (6..<9, false):
                            what = "unread"
                            try await collection.markUnread(ids)
                        case (9..<11, false):
                            what = "delete"
                            try await collection.delete(ids)
                        default:
                            what = Bool.random(using: &random) ? "archive read" : "archive all"
                            if what == "archive read" { try await collection.archiveRead() } else { try await collection.archiveAll() }
                        }
                        counts["state", default: 0] += 1
                        history.append("\(step) \(what) \(ids) \(changer === tablet ? "tablet" : "client") \(channel)/\(category ?? "-")/\(status)")
                    default:
                        break
                    }
                    if step % 25 == 24 {
                        try await expectQuiet(world, client, held, step: step, history: history)
                        quietPoints += 1
                    }
                }
                try await expectQuiet(world, client, held, step: 1_000, history: history)
                await client.disconnect()
                client.stopFollowingLifecycle()
                // The history reached every kind of step, more than once.
                for kind in ["send", "edit", "delete", "read", "reset", "stream", "push", "restart", "page", "signout", "network", "flip", "state"] {
                    #expect(counts[kind, default: 0] > 3, "\(kind): \(counts)")
                }
                #expect(pushesHandled > 0 && quietPoints == 40)
            }
        }

        /// The model's collections on `client`, brought up to date unless `refresh` is false.
        func open(_ client: HeraldClient, refresh: Bool = true) async throws -> [NotificationCollection] {
            var collections: [NotificationCollection] = []
            for (channel, category, status) in Self.collections {
                let collection = await client.collection(channelURL: channel, category: category, status: status)
                collection.pageSize = 7
                if refresh { try await collection.refresh() }
                collections.append(collection)
            }
            return collections
        }

        /// A quiet point: nothing is being sent any more. The client refreshes, and what it holds must
        /// come to equal a fresh client's full loads — at once, or after the stream's last events and
        /// the open transactions of the server's background work (which hold back what a sync may
        /// return) have passed; a difference that lasts past the deadline is a failure.
        func expectQuiet(_ world: ServerWorld, _ client: HeraldClient, _ held: [NotificationCollection], step: Int, history: [String]) async throws {
            let deadline = ContinuousClock.now + .seconds(20)
            var problems: [String] = []
            repeat {
                if !problems.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
                try await client.refreshAll()
                problems = try await differences(world, client, held, step: step)
            } while !problems.isEmpty && ContinuousClock.now < deadline
            for problem in problems {
                Issue.record("\(problem)\n\(history.suffix(40).joined(separator: "\n"))")
            }
        }

        /// How the client's collections and unread counts differ from a fresh client's.
        func differences(_ world: ServerWorld, _ client: HeraldClient, _ held: [NotificationCollection], step: Int) async throws -> [String] {
            var problems: [String] = []
            let fresh = try await world.client("u1")
            for collection in held {
                let truth = await fresh.collection(channelURL: collection.channelURL, category: collection.category, status: collection.status)
                truth.pageSize = 100
                try await truth.refresh()
                while truth.hasPrevious { try await truth.loadPrevious() }
                let mine = collection.notifications
                let label = "step \(step), \(collection.channelURL)/\(collection.category ?? "*")/\(collection.status)"
                if Set(mine.map(\.id)).count != mine.count { problems.append("\(label): duplicates \(mine.map(\.id))") }
                if Array(truth.notifications.prefix(mine.count)) != mine {
                    problems.append("\(label): \(diff(mine, truth.notifications)); held \(mine.map(\.id)), truth \(truth.notifications.map(\.id))")
                }
                if !collection.hasPrevious, mine.count != truth.notifications.count { problems.append("\(label): missing the oldest") }
                if collection.state != truth.state { problems.append("\(label): state \(collection.state) for \(truth.state)") }
                if !collection.isLive { problems.append("\(label): not live") }
            }
            await fresh.refreshUnread()
            await client.refreshUnread()
            if client.unread != fresh.unread { problems.append("step \(step): unread \(client.unread) for \(fresh.unread)") }
            return problems
        }

        func diff(_ mine: [HeraldNotification], _ truth: [HeraldNotification]) -> String {
            for (index, (a, b)) in zip(mine, truth).enumerated() where a != b {
                return
                    "first difference at \(index): held \(a.id) \(a.status) \(a.data) @\(a.position), truth \(b.id) \(b.status) \(b.data) @\(b.position)"
            }
            return "held \(mine.count), truth \(truth.count)"
        }
    }
}
