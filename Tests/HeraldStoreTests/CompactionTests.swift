import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres
import Testing

/// Compaction at the store (`CollectionStore.compact`, the step `CompactionService` runs): a pass
/// records where the change history stands, and a later one removes the tombstones below the newest
/// record older than the retention — and then the deleted notifications none of whose copies remain —
/// while newer tombstones stay, and so does a user's removed copy of a live broadcast that reached them
/// until the broadcast goes. `compacted_through` moves to that record and never back, and a sync token
/// below it can no longer continue (`CollectionSync.continues`, read from `CollectionStore.poll`).
///
/// Time passes by moving the records of the horizon back (`change_horizons.recorded_at`), as compaction
/// only compares them with `now()`.
@Suite("Compaction")
struct CompactionTests {

    @Test func tombstonesOlderThanTheRetentionGoWithTheirNotificationAndNewerOnesStay() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await StoreWorld.make(db, users: ["u1", "u2"])
            let old = try await world.send("old", to: .targets(["u1", "u2"])).id
            let live = try await world.send("live", to: .targets(["u1"])).id
            #expect(try await world.notifications.delete(old))
            try await world.untilHorizonPassesLatestChange(of: old)
            #expect(try await world.collections.compact(retention: .seconds(3600)) == nil, "the first pass only records the horizon")
            #expect(try await world.tombstones() == [old, old])
            // Deleted after that record, so at or above any bound it can become.
            let recent = try await world.send("recent", to: .targets(["u1"])).id
            #expect(try await world.notifications.delete(recent))

            try await db.client.query("UPDATE notifications SET deleted_at = deleted_at - interval '2 hours' WHERE id = \(old)")
            let pass = try #require(try await world.compactTwoHoursLater())
            #expect(pass.removedTombstones == 2)
            #expect(pass.removedNotifications == 1)
            #expect(try await world.tombstones() == [recent])
            #expect(try await db.client.query("SELECT id FROM notifications ORDER BY id").map { try $0.decode(Int64.self) } == [live, recent])
            let page = try await world.collections.page(userKey: try world.key("u1"), channelKey: world.feed, filter: .inbox, before: nil, limit: 10)
            #expect(page.map(\.id) == [live], "live copies are no tombstones")
            // At once again, nothing more is old enough.
            let again = try #require(try await world.collections.compact(retention: .seconds(3600)))
            #expect(again.removedTombstones == 0 && again.removedNotifications == 0)
            #expect(again.compactedThrough == pass.compactedThrough)
        }
    }

    @Test func aTokenFromBelowTheCompactionBoundCanNoLongerContinueAndTheBoundNeverMovesBack() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await StoreWorld.make(db, users: ["u1"])
            let (u1, feed) = try (world.key("u1"), world.feed)
            let gone = try await world.send("gone", to: .targets(["u1"])).id
            let loaded = try await world.collections.load(userKey: u1, channelKey: feed, filter: .inbox, limit: 10)
            let token = CollectionSync.firstToken(userKey: u1, channelKey: feed, filter: .inbox, snapshot: loaded.snapshot)
            func poll() async throws -> CollectionStore.Poll {
                try #require(
                    try await world.collections.poll(.init(userKey: u1, channelURL: "feed", filter: .inbox, after: token.position, limit: 0))
                )
            }
            func continues(_ token: SyncToken, _ poll: CollectionStore.Poll) -> Bool {
                CollectionSync.continues(token, userKey: u1, channelKey: feed, filter: .inbox, snapshot: poll.snapshot)
            }
            let before = try await poll()
            #expect(before.snapshot.compactedThrough == 0)
            #expect(continues(token, before))

            #expect(try await world.notifications.delete(gone))
            #expect(try await world.collections.compact(retention: .seconds(3600)) == nil)
            let recorded = try await db.client.query("SELECT max(xid) FROM change_horizons")[0].decode(Int64.self)
            #expect(recorded > token.position.xid)
            let pass = try #require(try await world.compactTwoHoursLater())
            #expect(pass.compactedThrough == recorded)
            let after = try await poll()
            #expect(after.snapshot.compactedThrough == recorded)
            #expect(!continues(token, after), "the history after the token may have lost the deletion")
            let page = try await CollectionSync(hugeGap: 100, limit: 10).page(after: token, userKey: u1, filter: .inbox, poll: after) { _ in 0 }
            #expect(page == nil, "not live: the client loads afresh")
            var atBound = token
            atBound.position = .through(xid: recorded)
            #expect(continues(atBound, after))

            // A pass with a longer retention finds no record old enough and leaves the bound where it is.
            #expect(try await world.collections.compact(retention: .seconds(3 * 3600)) == nil)
            #expect(try await poll().snapshot.compactedThrough == recorded)
        }
    }

    @Test func aRemovedCopyOfALiveBroadcastOutlivesCompactionUntilTheBroadcastGoes() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await StoreWorld.make(db, users: ["u1", "u2"])
            let (u1, u2) = try (world.key("u1"), world.key("u2"))
            let broadcast = try await world.send("all", to: .all).id
            while try await world.notifications.fanOutNextBatch(size: 10) != nil {}
            let targeted = try await world.send("one", to: .targets(["u1"])).id
            // An admin reset removes both of u1's copies.
            try await world.collections.reset(userKey: u1, channelKey: world.feed)
            #expect(try await world.tombstones() == [broadcast, targeted])
            try await world.untilHorizonPassesLatestChange(of: broadcast)
            #expect(try await world.collections.compact(retention: .seconds(3600)) == nil)
            let first = try #require(try await world.compactTwoHoursLater())
            // The broadcast still counts for u1 per channel: their tombstone is what gives that back when it goes.
            #expect(first.removedTombstones == 1)
            #expect(try await world.tombstones() == [broadcast])
            #expect(try await world.collections.liveState(userKey: u1, channelKey: world.feed).state.unreadCount == 0)

            #expect(try await world.notifications.delete(broadcast))
            #expect(try await world.collections.liveState(userKey: u1, channelKey: world.feed).state.unreadCount == 0)
            #expect(try await world.collections.liveState(userKey: u2, channelKey: world.feed).state.unreadCount == 0)
            try await world.untilHorizonPassesLatestChange(of: broadcast)
            // Now that it is gone, u1's tombstone goes at the next pass, and u2's (of its deletion) once that is old enough.
            let between = try #require(try await world.collections.compact(retention: .seconds(3600)))
            #expect(between.removedTombstones == 1)
            #expect(try await world.tombstones() == [broadcast])
            let second = try #require(try await world.compactTwoHoursLater())
            #expect(second.removedTombstones == 1)
            #expect(try await world.tombstones().isEmpty)
        }
    }
}

extension StoreWorld {
    fileprivate var feed: Int64 { channels["feed"] ?? 0 }

    /// The notification ids of every tombstone, in order.
    fileprivate func tombstones() async throws -> [Int64] {
        try await db.client.query("SELECT notification_id FROM notification_recipients WHERE deleted ORDER BY notification_id")
            .map { try $0.decode(Int64.self) }
    }

    /// Waits until the latest change to the notification's copies is below the cluster's horizon:
    /// any transaction still open there (another test's, in another database) holds the horizon
    /// back, and a compaction records the horizon, not the latest commit.
    fileprivate func untilHorizonPassesLatestChange(of id: Int64) async throws {
        let xid = try await db.client.query("SELECT max(change_xid) FROM notification_recipients WHERE notification_id = \(id)")[0]
            .decode(Int64.self)
        try await waitUntil("the horizon to pass \(xid)") {
            try await db.client.query("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")[0].decode(Int64.self) > xid
        }
    }

    /// A pass of compaction with a retention of an hour, run as if two hours had gone by since the
    /// passes before it recorded the horizon.
    fileprivate func compactTwoHoursLater() async throws -> CollectionStore.Compaction? {
        try await db.client.query("UPDATE change_horizons SET recorded_at = recorded_at - interval '2 hours'")
        return try await collections.compact(retention: .seconds(3600))
    }
}
