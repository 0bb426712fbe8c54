import Foundation
import HeraldTesting
import NIOHTTP1
import Testing

@testable import HeraldClient

extension ClientSuites {
    /// The Feed and Chat view models against a real server: the feed's "new" badges from the last-seen
    /// snapshot, paging, filter and states; the chat's order and days.
    @Suite("Client view models")
    @MainActor
    struct ViewModelTests {
        /// The badges follow the last-seen time as it was when the view opened: marking the channel
        /// seen does not clear them, `updateLastSeenAt()` does, and what comes later is new again.
        @Test func theFeedsNewBadgeFollowsTheSnapshotTakenAtOpen() async throws {
            try await ServerWorld.with { world in
                let first = try await world.send("seen one", to: ["u1"])
                let second = try await world.send("seen two", to: ["u1"])
                let elsewhere = try await world.client("u1")
                try await (await elsewhere.collection(channelURL: "feed")).markSeen()
                let third = try await world.send("unseen", to: ["u1"])

                let client = try await world.client("u1")
                let model = FeedModel(client: client, channelURL: "feed")
                #expect(model.phase == .loading)
                await model.open()
                #expect(model.phase == .loaded)
                #expect(model.items.map(\.id) == [third, second, first])
                #expect(model.items.map(\.isNew) == [true, false, false])

                try await model.markSeen()
                await model.refresh()
                #expect(model.items.map(\.isNew) == [true, false, false], "marking seen must not clear the badges under the user's eyes")

                try await model.updateLastSeenAt()
                #expect(model.items.map(\.isNew) == [false, false, false])
                let fourth = try await world.send("later", to: ["u1"])
                await model.refresh()
                #expect(model.items.first?.id == fourth && model.items.first?.isNew == true)
                #expect(model.unreadCount == 4)

                try await model.didOpen(try #require(model.items.first))
                #expect(model.items.first?.notification.status == .read && model.unreadCount == 3)
            }
        }

        /// Paging to the end, the category filter, the empty state, and a failed load.
        @Test func theFeedPagesFiltersAndSaysWhenEmptyOrFailing() async throws {
            try await ServerWorld.with { world in
                for index in 0..<33 { try await world.send("news \(index)", to: ["u1"]) }
                try await world.send("a promotion", to: ["u1"], category: "promo")
                let client = try await world.client("u1")
                let model = FeedModel(client: client, channelURL: "feed")
                await model.open()
                #expect(model.items.count == 30 && !model.isAtEnd)
                await model.loadMore()
                #expect(model.items.count == 34 && model.isAtEnd && model.loadMoreError == nil)

                await model.select(category: "promo")
                #expect(model.category == "promo" && model.items.map { $0.notification.category } == ["promo"])

                let empty = FeedModel(client: client, channelURL: "chat")
                await empty.open()
                #expect(empty.phase == .empty && empty.items.isEmpty)

                world.kill()
                await model.refresh()
                guard case .failed(let error) = model.phase else {
                    Issue.record("a refresh against a dead server did not fail: \(model.phase)")
                    return
                }
                #expect(error.isTransient)
                #expect(model.items.count == 1, "what was shown stays shown")
            }
        }

        /// The chat is oldest first (the newest at the bottom), older pages come in above, and every
        /// message carries its time.
        @Test func theChatIsOldestFirstAndPagesUpwards() async throws {
            try await ServerWorld.with { world in
                var sent: [String] = []
                for index in 0..<35 { sent.append(try await world.send("message \(index)", to: ["u1"], channel: "chat")) }
                let client = try await world.client("u1")
                let model = ChatModel(client: client, channelURL: "chat", calendar: Calendar(identifier: .gregorian))
                await model.open()
                #expect(model.messages.map(\.id) == Array(sent.suffix(30)))
                #expect(!model.isAtStart)
                await model.loadOlder()
                #expect(model.messages.map(\.id) == sent && model.isAtStart)
                #expect(zip(model.messages, model.messages.dropFirst()).allSatisfy { $0.time <= $1.time })
                #expect(model.days.flatMap(\.messages).map(\.id) == sent)
                try await model.markRead()
                #expect(model.unreadCount == 0)
            }
        }

        /// Days split where the model's calendar says a day ends.
        @Test func chatDaysFollowTheCalendar() throws {
            var utc = Calendar(identifier: .gregorian)
            utc.timeZone = try #require(TimeZone(identifier: "UTC"))
            let times = ["2026-11-25T23:58:00Z", "2026-11-25T23:59:30Z", "2026-11-26T00:00:10Z", "2026-11-27T12:00:00Z"]
            let messages = try times.enumerated().map { index, time in
                ChatModel.Message(notification: Self.notification(id: index + 1, at: try #require(ISO8601DateFormatter().date(from: time))))
            }
            let days = ChatModel.days(of: messages, calendar: utc)
            #expect(days.map { $0.messages.map(\.id) } == [["1", "2"], ["3"], ["4"]])
            var tokyo = utc
            tokyo.timeZone = try #require(TimeZone(identifier: "Asia/Tokyo"))
            #expect(ChatModel.days(of: messages, calendar: tokyo).map { $0.messages.map(\.id) } == [["1", "2", "3"], ["4"]])
        }

        static func notification(id: Int, at time: Date) -> HeraldNotification {
            HeraldNotification(
                id: String(id),
                templateKey: "plain",
                templateVersion: 1,
                data: .object([:]),
                category: "",
                tags: [],
                eventDeadline: nil,
                status: .sent,
                createdAt: time,
                updatedAt: time,
                position: Int64(id)
            )
        }
    }
}
