import Foundation
import HeraldTesting
import NIOHTTP1
import Testing

@testable import HeraldClient

extension ClientSuites {
    /// A user's topics and category choices through the library against a real `herald serve`:
    /// following, muting and unfollowing, turning a category off, and sends arriving (or not) in the feed.
    @Suite("Client topics and categories")
    @MainActor
    struct TopicTests {
        @Test func aUserFollowsMutesAndUnfollowsAndSendsFollow() async throws {
            try await ServerWorld.with { world in
                try await world.admin(.PUT, "/v1/topics/open", #"{"name":"Open","self_subscribe":true}"#)
                try await world.admin(.PUT, "/v1/topics/team", #"{"name":"Team"}"#)
                try await world.admin(.POST, "/v1/topics/team/subscribers", #"{"user_ids":["u1"]}"#)
                let client = try await world.client("u1")

                #expect(try await client.topics().map(\.id) == ["team"])
                #expect(try await client.topics().first?.canUnfollow == false)
                let followed = try await client.follow(topic: "open")
                #expect(followed.id == "open" && followed.name == "Open" && followed.canUnfollow && !followed.isMuted)
                #expect(try await client.setMuted(true, topic: "team").isMuted)
                #expect(try await client.topics().map { "\($0.id) \($0.isMuted)" } == ["open false", "team true"])

                // A send to each: only the unmuted topic's reaches the feed.
                var sent: [String] = []
                for topic in ["team", "open"] {
                    let body = #"{"channel_url":"feed","template_key":"plain","topic":"\#(topic)","variables":{"title":"to \#(topic)"}}"#
                    sent.append(try #require(try await world.admin(.POST, "/v1/notifications", body)["id"] as? String))
                }
                for id in sent {
                    try await eventually("the fan-out of \(id)") {
                        (try await world.admin(.GET, "/v1/notifications/\(id)")["fanout"] as? [String: Any])?["state"] as? String == "done"
                    }
                }
                let feed = await client.collection(channelURL: "feed")
                try await eventually("the open topic's send in the feed") {
                    try await feed.refresh()
                    return !feed.notifications.isEmpty
                }
                #expect(feed.notifications.map { $0.data["title"]?.stringValue } == ["to open"])

                // The app's own topic cannot be left, only muted; an open one can.
                let refused = await #expect(throws: HeraldClientError.self) { try await client.unfollow(topic: "team") }
                guard case .server(403, "topic_not_self_subscribe", _) = refused else {
                    Issue.record("unfollowing the app's topic: \(String(describing: refused))")
                    return
                }
                try await client.unfollow(topic: "open")
                #expect(try await client.topics().map(\.id) == ["team"])
            }
        }

        @Test func aCategoryTurnedOffNeverReachesTheFeed() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1")
                let before = try await client.categoryPreferences(channelURL: "feed")
                #expect(before.map { "\($0.id) \($0.inbox) \($0.inboxChosen)" } == ["news true false", "promo true false"])
                let promo = try await client.setCategoryPreference(channelURL: "feed", category: "promo", inbox: false)
                #expect(!promo.inbox && promo.inboxChosen && promo.push)
                try await world.send("an offer", to: ["u1"], category: "promo")
                try await world.send("the news", to: ["u1"], category: "news")
                let feed = await client.collection(channelURL: "feed")
                try await eventually("the news in the feed") {
                    try await feed.refresh()
                    return !feed.notifications.isEmpty
                }
                #expect(feed.notifications.map { $0.data["title"]?.stringValue } == ["the news"])
                try await client.refreshAll()
                #expect(client.unread.total == 1)
            }
        }
    }
}
