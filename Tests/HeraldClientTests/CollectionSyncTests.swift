import Foundation
import HeraldStore
import HeraldTesting
import NIOHTTP1
import Testing

@testable import HeraldClient

extension ClientSuites {
    /// `NotificationCollection` against a real `herald serve`: loads, pages, follows changes by sync, and
    /// reloads (saying so) when the server cannot continue its token.
    @Suite("Client collections")
    @MainActor
    struct CollectionSyncTests {
        /// What a fresh client shows for `user`'s collection: the truth the tests compare with.
        func freshLoad(_ world: ServerWorld, _ user: String, channel: String = "feed", category: String? = nil) async throws -> [HeraldNotification] {
            let client = try await world.client(user)
            let collection = await client.collection(channelURL: channel, category: category)
            collection.pageSize = 100
            try await collection.refresh()
            while collection.hasPrevious { try await collection.loadPrevious() }
            return collection.notifications
        }

        @Test func loadsTheNewestPageAndPagesToTheEnd() async throws {
            try await ServerWorld.with { world in
                var sent: [String] = []
                for index in 0..<75 { sent.append(try await world.send("n\(index)", to: ["u1"])) }
                let client = try await world.client("u1")
                let collection = await client.collection(channelURL: "feed")
                var updates: [NotificationCollection.Update] = []
                collection.onUpdate = { updates.append($0) }
                try await collection.refresh()
                #expect(collection.notifications.map(\.id) == Array(sent.reversed().prefix(30)))
                #expect(collection.hasPrevious && collection.isLive)
                #expect(collection.state.unreadCount == 75)
                #expect(collection.channel?.name == "Feed")
                #expect(updates == [.reloaded])
                try await collection.loadPrevious()
                try await collection.loadPrevious()
                #expect(!collection.hasPrevious)
                #expect(collection.notifications.map(\.id) == sent.reversed())
                #expect(collection.notifications.first?.data["title"]?.stringValue == "n74")
                // Nothing left to page: a further call changes nothing.
                try await collection.loadPrevious()
                #expect(collection.notifications.count == 75)
                #expect(client.unread.total == 75)
            }
        }

        @Test func sendsEditsDeletesAndReadsElsewhereConvergeToAFreshLoad() async throws {
            try await ServerWorld.with { world in
                var sent: [String] = []
                for index in 0..<40 { sent.append(try await world.send("n\(index)", to: ["u1", "u2"])) }
                let phone = try await world.client("u1")
                let collection = await phone.collection(channelURL: "feed")
                collection.pageSize = 10
                try await collection.refresh()
                try await collection.loadPrevious()
                // Elsewhere: new ones, an edit of a held one and of one not yet paged in, deletions, a read
                // of some on another device of the same user.
                sent.append(try await world.send("late", to: ["u1"]))
                try await world.admin(.PATCH, "/v1/notifications/\(sent[35])", #"{"variables":{"title":"edited"}}"#)
                try await world.admin(.PATCH, "/v1/notifications/\(sent[2])", #"{"variables":{"title":"old edited"}}"#)
                try await world.admin(.DELETE, "/v1/notifications/\(sent[36])")
                try await world.admin(.DELETE, "/v1/notifications/\(sent[3])")
                let tablet = try await world.client("u1")
                let other = await tablet.collection(channelURL: "feed")
                try await other.refresh()
                try await other.markRead([sent[39], sent[38]])

                let changed = try await collection.refresh()
                #expect(changed)
                let held = collection.notifications
                #expect(Set(held.map(\.id)).count == held.count)
                #expect(held.first?.data["title"]?.stringValue == "late")
                #expect(!held.contains { $0.id == sent[36] })
                #expect(held.first { $0.id == sent[35] }?.data["title"]?.stringValue == "edited")
                #expect(held.first { $0.id == sent[39] }?.status == .read)
                // What it holds is exactly the newest part of what a fresh load shows.
                let truth = try await freshLoad(world, "u1")
                #expect(Array(truth.prefix(held.count)) == held)
                // Paging the rest in ends equal to the fresh load (the older edit and deletion included).
                while collection.hasPrevious { try await collection.loadPrevious() }
                #expect(collection.notifications == truth)
                // 41 sent to u1, 2 deleted, 2 read elsewhere.
                #expect(collection.state.unreadCount == 37)
            }
        }

        @Test func aResetAHugeGapAndAnExpiredTokenReloadAndSaySo() async throws {
            try await ServerWorld.with(settings: ["HERALD_SYNC_HUGE_GAP": "5"]) { world in
                for index in 0..<3 { try await world.send("n\(index)", to: ["u1"]) }
                let client = try await world.client("u1")
                let collection = await client.collection(channelURL: "feed")
                var updates: [NotificationCollection.Update] = []
                collection.onUpdate = { updates.append($0) }
                try await collection.refresh()
                #expect(updates == [.reloaded] && collection.reloadCount == 0)

                // A reset: the collection empties and reloads.
                try await world.admin(.POST, "/v1/users/u1/channels/feed/reset")
                let fresh = try await world.send("after reset", to: ["u1"])
                try await collection.refresh()
                #expect(collection.reloadCount == 1 && updates.last == .reloaded)
                #expect(collection.notifications.map(\.id) == [fresh])

                // More changes than the huge-gap threshold.
                for index in 0..<8 { try await world.send("gap\(index)", to: ["u1"]) }
                try await collection.refresh()
                #expect(collection.reloadCount == 2 && updates.last == .reloaded)
                #expect(collection.notifications.count == 9 && collection.isLive)

                // A token older than the retained change history (compaction passed it).
                try await world.admin(.DELETE, "/v1/notifications/\(fresh)")
                // The first pass records the horizon (past the delete), the second compacts through it.
                _ = try await CollectionStore(client: world.database).compact(retention: .zero)
                #expect(try await CollectionStore(client: world.database).compact(retention: .zero) != nil)
                try await collection.refresh()
                #expect(collection.reloadCount == 3 && updates.last == .reloaded)
                #expect(collection.notifications.count == 8)

                // A token the server cannot read at all (forged, or from another server).
                collection.token = "not-a-token"
                try await collection.refresh()
                #expect(collection.reloadCount == 4 && collection.notifications.count == 8 && collection.isLive)
            }
        }

        @Test func aCategoryCollectionHoldsOnlyItsCategory() async throws {
            try await ServerWorld.with { world in
                let news = try await world.send("news", to: ["u1"])
                let promo = try await world.send("promo", to: ["u1"], category: "promo")
                let client = try await world.client("u1")
                let promos = await client.collection(channelURL: "feed", category: "promo")
                let all = await client.collection(channelURL: "feed")
                try await promos.refresh()
                try await all.refresh()
                #expect(promos.notifications.map(\.id) == [promo])
                #expect(all.notifications.map(\.id) == [promo, news])
                let second = try await world.send("promo 2", to: ["u1"], category: "promo")
                try await world.send("news 2", to: ["u1"])
                try await promos.refresh()
                #expect(promos.notifications.map(\.id) == [second, promo])
            }
        }
    }
}
