import Foundation
import HeraldTesting
import NIOHTTP1
import Postgres
import Testing

@testable import HeraldClient

extension ClientSuites {
    /// The channel list by its change log, unread counts, seen marks and events; and the cache: a cold
    /// start shows the last state offline and resumes from the saved token.
    @Suite("Client channel list and cache")
    @MainActor
    struct ChannelListAndCacheTests {
        /// A server that reads on a standby answers from what the standby has replayed; the client's
        /// own marks carry their position and stay over an answer read below it.
        @Test func marksStayOverAStandbyThatHasNotReplayedThem() async throws {
            try await ServerWorld.withStandby(applyDelay: .seconds(3)) { world in
                let client = try await world.client("u1")
                let sent = try await world.send("hello", to: ["u1"])
                let standby = try #require(world.standby)
                try await eventually("the standby replays the send (and the session before it)") {
                    (try? await standby.query("SELECT count(*) FROM notifications").first?.decode(Int64.self)) == 1
                }
                let feed = await client.collection(channelURL: "feed")
                try await feed.refresh()
                #expect(feed.notifications.map(\.id) == [sent])
                await client.refreshUnread()
                #expect(feed.state.unreadCount == 1 && client.unread == UnreadCounts(total: 1, byChannel: ["feed": 1]))
                // The mark's own sync and unread refresh read on the standby, three seconds behind it.
                #expect(try await feed.markRead() == 0)
                #expect(client.unread == UnreadCounts(total: 0, byChannel: ["feed": 0]))
                try await feed.refresh()
                await client.refreshUnread()
                #expect(feed.state.unreadCount == 0 && client.unread == UnreadCounts(total: 0, byChannel: ["feed": 0]))
                #expect(feed.notifications.first?.status == .sent)
                try await eventually("the standby replays the mark") {
                    try await feed.refresh()
                    return feed.notifications.first?.status == .read
                }
                #expect(feed.state.unreadCount == 0)
            }
        }

        @Test func theChannelListFollowsItsChangeLogAndUnreadCountsFollow() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1")
                try await client.channels.refresh()
                #expect(client.channels.chat.isEmpty && client.channels.feed.isEmpty)
                let hello = try await world.send("hello", to: ["u1"], channel: "chat")
                try await world.send("news", to: ["u1"])
                // A sync answers up to where every older transaction in the cluster has ended, and the
                // server's own background work may hold one open a moment: what is committed arrives
                // at this refresh or a later one.
                var changed = false
                try await eventually("both channels in the list") {
                    changed = try await client.channels.refresh() || changed
                    return client.channels.chat.map(\.id) == ["chat"] && client.channels.feed.map(\.id) == ["feed"]
                }
                #expect(changed)
                #expect(client.channels.chat.first?.lastNotification?.id == hello)
                #expect(client.channels.chat.first?.unreadCount == 1)
                // Quiet: nothing changes. A rename reaches the list through its change log.
                #expect(try await !client.channels.refresh())
                try await world.admin(.PUT, "/v1/channels/chat", #"{"kind":"chat","name":"Support"}"#)
                try await eventually("the rename") {
                    try await client.channels.refresh()
                    return client.channels.chat.first?.channel.name == "Support"
                }
                // Unread counts: total and per channel; a read changes both.
                await client.refreshUnread()
                #expect(client.unread == UnreadCounts(total: 2, byChannel: ["chat": 1, "feed": 1]))
                let chat = await client.collection(channelURL: "chat")
                try await chat.refresh()
                #expect(try await chat.markRead() == 0)
                #expect(client.unread.total == 1 && client.unread.byChannel["chat"] == 0)
                try await eventually("the read in the list") {
                    try await client.channels.refresh()
                    return client.channels.chat.first?.unreadCount == 0
                }
                // A deleted channel leaves the list.
                try await world.admin(.DELETE, "/v1/channels/chat")
                try await eventually("the deleted channel to leave the list") {
                    try await client.channels.refresh()
                    return client.channels.chat.isEmpty
                }
                #expect(client.channels.feed.map(\.id) == ["feed"])
                // A token the server cannot continue: the list loads afresh.
                client.channels.token = "forged"
                try await client.channels.refresh()
                #expect(client.channels.feed.map(\.id) == ["feed"] && client.channels.token != "forged")
            }
        }

        @Test func seenMarksAndViewAndClickEventsReachTheServer() async throws {
            try await ServerWorld.with { world in
                let id = try await world.send("hello", to: ["u1"])
                let client = try await world.client("u1")
                let feed = await client.collection(channelURL: "feed")
                try await feed.refresh()
                #expect(feed.state.lastSeenAt == nil)
                let seen = Date(milliseconds: 1_790_000_000_123)
                try await feed.markSeen(at: seen)
                #expect(feed.state.lastSeenAt == seen)
                try await feed.log(.viewed, ids: [id])
                try await feed.log(.clicked, ids: [id])
                let view = try await world.admin(.GET, "/v1/notifications/\(id)")
                let counts = try #require(view["counts"] as? [String: Any])
                #expect(counts["viewed"] as? Int == 1 && counts["clicked"] as? Int == 1)
                // Someone else's id is refused by the server, and said so.
                let other = try await world.send("other", to: ["u2"])
                await #expect(
                    throws: HeraldClientError.server(
                        status: 404,
                        code: "notification_not_found",
                        message: "You have no notification with id \(other); nothing was recorded."
                    )
                ) {
                    try await feed.log(.viewed, ids: [other])
                }
            }
        }

        /// A session past its rate limit gets the server's 429 as `rateLimited`, with its `Retry-After`.
        @Test func aRateLimitedSessionIsToldSo() async throws {
            try await ServerWorld.with(settings: ["HERALD_RATE_LIMIT_SESSION": "0.01/2"]) { world in
                let client = try await world.client("u1")
                let feed = await client.collection(channelURL: "feed")
                try await feed.refresh()
                try await feed.refresh()
                do {
                    try await feed.refresh()
                    Issue.record("a third request within the burst of two was answered")
                } catch HeraldClientError.rateLimited(let retryAfter) {
                    #expect(retryAfter == .seconds(100))
                }
            }
        }

        @Test func aColdStartShowsTheLastStateOfflineAndResumesFromItsToken() async throws {
            try await ServerWorld.with { world in
                let directory = CacheDirectory()
                defer { directory.remove() }
                let cache = directory.url
                for index in 0..<12 { try await world.send("n\(index)", to: ["u1"]) }
                let device = Data(repeating: 0xAB, count: 32)
                var shown: [HeraldNotification] = []
                do {
                    let first = try await world.client("u1", cache: cache)
                    try await first.registerDevice(token: device, environment: .sandbox, topic: ServerWorld.topic)
                    let feed = await first.collection(channelURL: "feed")
                    feed.pageSize = 5
                    try await feed.refresh()
                    try await feed.loadPrevious()
                    try await first.channels.refresh()
                    await first.refreshUnread()
                    shown = feed.notifications
                }
                #expect(shown.count == 10)

                // Offline: the server is down, and the new client shows what the last run saved.
                world.kill()
                let offline = try await world.client("u1", cache: cache)
                let restored = await offline.collection(channelURL: "feed")
                #expect(restored.notifications == shown && restored.hasPrevious && restored.isLive)
                #expect(offline.channels.feed.map(\.id) == ["feed"] && offline.unread.total == 12)
                #expect(offline.deviceToken == String(repeating: "ab", count: 32))
                await #expect(throws: (any Error).self) { try await restored.refresh() }
                #expect(restored.notifications == shown)

                // Back online: it continues from the saved token (no reload), with what came meanwhile.
                try await world.restart()
                let late = try await world.send("while away", to: ["u1"])
                var updates: [NotificationCollection.Update] = []
                restored.onUpdate = { updates.append($0) }
                try await restored.refresh()
                #expect(updates == [.changed(inserted: [late], updated: [], removed: [])])
                #expect(restored.reloadCount == 0 && restored.notifications.map(\.id) == [late] + shown.map(\.id))
            }
        }
    }
}
