import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres
import Testing

/// Read and seen marks at the store (`CollectionStore.markRead`, `markSeen`): a read mark counts down
/// exactly the caller's unread copies it names in that channel, or all of them (which also moves
/// `last_read_at`), so repeating it changes nothing and no count goes below zero; other users' and
/// other channels' copies are untouched; `last_read_at` and `last_seen_at` only move forward; and each
/// mark answers the channel state after it with its position, the id of its transaction, which is the
/// new change position of every copy it marked.
@Suite("Marks")
struct MarkTests {

    @Test func aReadMarkOfIdsCountsDownOnlyTheCallersUnreadCopiesInThatChannelAndOnlyOnce() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await StoreWorld.make(db, channels: [("feed", nil), ("other", nil)], users: ["u1", "u2"])
            let (u1, feed) = try (world.key("u1"), world.channelKey("feed"))
            var both: [Int64] = []
            for title in ["one", "two", "three"] { both.append(try await world.send(title, to: ["u1", "u2"])) }
            let elsewhere = try await world.send("elsewhere", to: ["u1"], in: "other")
            let theirs = try await world.send("theirs", to: ["u2"])
            #expect(try await world.unread("u1") == 3)

            let first = try await world.collections.markRead(userKey: u1, channelKey: feed, ids: [both[0]])
            #expect(first.state.unreadCount == 2)
            #expect(first.state.lastReadAt == nil, "only a mark of everything moves last_read_at")
            // The mark's position is its transaction's id: the new change position of the copy it marked.
            #expect(try await world.collections.positions(userKey: u1, channelKey: feed, ids: [both[0]]) == [both[0]: first.position])

            let again = try await world.collections.markRead(userKey: u1, channelKey: feed, ids: [both[0]])
            #expect(again.state.unreadCount == 2, "a copy already read is not counted again")
            #expect(again.position > first.position)
            #expect(try await world.collections.positions(userKey: u1, channelKey: feed, ids: [both[0]]) == [both[0]: first.position])

            // Ids of the caller's copies in another channel, and of another user's copies, mark nothing.
            let mixed = try await world.collections.markRead(userKey: u1, channelKey: feed, ids: [both[0], both[1], elsewhere, theirs])
            #expect(mixed.state.unreadCount == 1)
            #expect(try await world.statuses("u1") == [both[0]: CollectionItem.Status.read, both[1]: .read, both[2]: .sent])
            #expect(try await world.unread("u1", in: "other") == 1)
            #expect(try await world.statuses("u1", in: "other") == [elsewhere: CollectionItem.Status.sent])
            #expect(try await world.unread("u2") == 4)
            #expect(try await world.statuses("u2").values.allSatisfy { $0 == .sent })
            // An empty list marks nothing either.
            #expect(try await world.collections.markRead(userKey: u1, channelKey: feed, ids: []).state.unreadCount == 1)
            #expect(try await world.collections.unread(userKey: u1).total == 2)
        }
    }

    @Test func aReadMarkOfEverythingEmptiesTheChannelNeverBelowZeroAndLastReadOnlyMovesForward() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await StoreWorld.make(db, channels: [("feed", nil), ("other", nil)], users: ["u1", "u2"])
            let (u1, feed) = try (world.key("u1"), world.channelKey("feed"))
            for title in ["one", "two"] { _ = try await world.send(title, to: ["u1", "u2"]) }
            _ = try await world.send("elsewhere", to: ["u1"], in: "other")

            let all = try await world.collections.markRead(userKey: u1, channelKey: feed, ids: nil)
            #expect(all.state.unreadCount == 0)
            let lastRead = try #require(all.state.lastReadAt)
            let twice = try await world.collections.markRead(userKey: u1, channelKey: feed, ids: nil)
            #expect(twice.state.unreadCount == 0)
            #expect(twice.position > all.position)
            let lastReadAgain = try #require(twice.state.lastReadAt)
            #expect(lastReadAgain >= lastRead)
            let adjustment = try await db.client.query(
                "SELECT unread_adjustment FROM channel_states WHERE user_key = \(u1) AND channel_key = \(feed)"
            )[0].decode(Int64.self)
            #expect(adjustment == 0, "two copies counted up, two down, nothing more")
            #expect(try await world.statuses("u1").values.allSatisfy { $0 == .read })
            #expect(try await world.unread("u1", in: "other") == 1)
            #expect(try await world.unread("u2") == 2)

            // A later copy is unread until the next mark.
            _ = try await world.send("three", to: ["u1"])
            #expect(try await world.unread("u1") == 1)
            #expect(try await world.collections.markRead(userKey: u1, channelKey: feed, ids: nil).state.unreadCount == 0)

            // last_read_at never moves back, not even to the server's clock.
            let ahead = Date(timeIntervalSince1970: 4_000_000_000)
            try await db.client.query("UPDATE channel_states SET last_read_at = \(ahead) WHERE user_key = \(u1) AND channel_key = \(feed)")
            #expect(try await world.collections.markRead(userKey: u1, channelKey: feed, ids: nil).state.lastReadAt == ahead)

            // A channel where the user has nothing: read at once, with nothing to count down.
            let empty = try await world.collections.markRead(userKey: try world.key("u2"), channelKey: try world.channelKey("other"), ids: nil)
            #expect(empty.state.unreadCount == 0)
            #expect(empty.state.lastReadAt != nil)
        }
    }

    @Test func aSeenMarkOnlyMovesLastSeenForwardAndLeavesUnreadAndOtherUsersAlone() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await StoreWorld.make(db, channels: [("feed", nil), ("other", nil)], users: ["u1", "u2"])
            let (u1, feed) = try (world.key("u1"), world.channelKey("feed"))
            let sent = try await world.send("one", to: ["u1", "u2"])
            let seenAt = Date(timeIntervalSince1970: 1_800_000_000)

            let seen = try await world.collections.markSeen(userKey: u1, channelKey: feed, at: seenAt)
            #expect(seen.state.lastSeenAt == seenAt)
            #expect(seen.state.unreadCount == 1 && seen.state.lastReadAt == nil)
            let older = try await world.collections.markSeen(userKey: u1, channelKey: feed, at: seenAt.addingTimeInterval(-60))
            #expect(older.state.lastSeenAt == seenAt, "never backwards")
            #expect(older.position > seen.position)
            let later = try await world.collections.markSeen(userKey: u1, channelKey: feed, at: seenAt.addingTimeInterval(60))
            #expect(later.state.lastSeenAt == seenAt.addingTimeInterval(60))
            #expect(later.state.unreadCount == 1)
            #expect(later.position > older.position)

            #expect(try await world.statuses("u1") == [sent: CollectionItem.Status.sent], "seeing is not reading")
            let theirs = try await world.collections.liveState(userKey: try world.key("u2"), channelKey: feed).state
            #expect(theirs.lastSeenAt == nil && theirs.unreadCount == 1)
            let elsewhere = try await world.collections.liveState(userKey: u1, channelKey: try world.channelKey("other")).state
            #expect(elsewhere.lastSeenAt == nil)
        }
    }
}

extension StoreWorld {
    /// The user's live copies in the channel with their status, by notification id.
    fileprivate func statuses(_ user: String, in channel: String = "feed") async throws -> [Int64: CollectionItem.Status] {
        let items = try await collections.page(userKey: key(user), channelKey: channelKey(channel), filter: .inbox, before: nil, limit: 100)
        return Dictionary(uniqueKeysWithValues: items.map { ($0.id, $0.status) })
    }

    /// Sends `title` to `users` in `channel`; returns its id.
    fileprivate func send(_ title: String, to users: [String], in channel: String = "feed") async throws -> Int64 {
        try await send(title, to: .targets(users), in: channel).id
    }
}
