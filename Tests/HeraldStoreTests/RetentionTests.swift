import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres
import Testing

/// Retention and expiry at the store (`NotificationStore.expireNext`, the step `ExpiryService` runs): a
/// notification past its send's `expires_at`, or older than its channel's retention, leaves every
/// recipient's collection as a delete would — each copy a tombstone, a deletion in their change log —
/// and the unread counts of the users who had it unread drop, however it was counted (a targeted copy,
/// a broadcast folded into the counters or counted per channel), while users who had read it keep
/// theirs; notifications not yet due stay.
///
/// Time passes by moving the rows' times back, as expiry only compares them with `now()`.
@Suite("Retention")
struct RetentionTests {

    @Test func aNotificationPastItsExpiryLeavesEveryCollectionAsADeletionAndCountsDownWhoHadItUnread() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await StoreWorld.make(db, channels: [("feed", nil), ("short", "1d")], users: ["u1", "u2", "u3"])
            let (u1, u2, feed) = try (world.key("u1"), world.key("u2"), world.channelKey("feed"))
            let expiring = try await world.send("soon", to: .targets(["u1", "u2"]), expiresAt: Date().addingTimeInterval(3600))
            let kept = try await world.send("kept", to: .targets(["u1", "u2"]))
            // u2 has read the one that expires: its expiry counts nothing down for them.
            _ = try await world.collections.markRead(userKey: u2, channelKey: feed, ids: [expiring.id])
            let loaded = try await world.collections.load(userKey: u1, channelKey: feed, filter: .inbox, limit: 10)
            let token = CollectionSync.firstToken(userKey: u1, channelKey: feed, filter: .inbox, snapshot: loaded.snapshot)
            #expect(try await world.notifications.expireNext() == nil, "nothing is due yet")
            #expect(try await world.counts() == ["u1": 2, "u2": 1, "u3": 0])

            try await db.client.query("UPDATE notifications SET expires_at = now() - interval '1 second' WHERE id = \(expiring.id)")
            #expect(try await world.notifications.expireNext() == expiring.id)
            #expect(try await world.notifications.expireNext() == nil, "the one without an expiry stays")
            #expect(try await world.notifications.get(expiring.id) == nil)
            #expect(try await world.notifications.get(kept.id) != nil)
            #expect(try await world.counts() == ["u1": 1, "u2": 1, "u3": 0])
            try await world.expectCountsMatchCopies()
            #expect(try await world.collections.load(userKey: u1, channelKey: feed, filter: .inbox, limit: 10).items.map(\.id) == [kept.id])

            // Every copy is a tombstone with a new position: the change log after the token says it was deleted.
            let copies = try await db.client.query(
                """
                SELECT count(*) FILTER (WHERE deleted), count(*), max(change_xid) FROM notification_recipients
                WHERE notification_id = \(expiring.id)
                """
            )[0].decode((Int64, Int64, Int64).self)
            #expect(copies.0 == 2 && copies.1 == 2 && copies.2 > token.position.xid)
            // Read below the horizon, which any transaction still open in the cluster (another test's) holds back.
            try await waitUntil("the horizon to pass the expiry") {
                try await db.client.query("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")[0].decode(Int64.self) > copies.2
            }
            let poll = try #require(
                try await world.collections.poll(.init(userKey: u1, channelURL: "feed", filter: .inbox, after: token.position, limit: 100))
            )
            let changes = poll.changes.map(\.change)
            #expect(changes.contains(.deleted(expiring.id)))
            #expect(!changes.contains(.deleted(kept.id)))
            #expect(CollectionSync.continues(token, userKey: u1, channelKey: feed, filter: .inbox, snapshot: poll.snapshot), "expiry is no reset")
        }
    }

    @Test func aNotificationOlderThanItsChannelsRetentionExpiresAndEveryWayItWasCountedIsTakenBack() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await StoreWorld.make(db, channels: [("feed", nil), ("short", "1d")], users: ["u1", "u2", "u3"])
            let short = try world.channelKey("short")
            // A broadcast, fanned out and folded for its first user only: both ways of counting it are in play.
            let broadcast = try await world.send("all", to: .all, in: "short")
            while try await world.notifications.fanOutNextBatch(size: 1) != nil {}
            #expect(try await world.notifications.foldNextBatch(size: 1)?.finished == false)
            let stored = try #require(try await world.notifications.get(broadcast.id))
            let until = try #require(stored.expiresAt)
            #expect(abs(until.timeIntervalSince(stored.createdAt) - 86_400) < 0.001, "the channel's retention of 1d")
            let fresh = try await world.send("fresh", to: .targets(["u3"]), in: "short")
            _ = try await world.collections.markRead(userKey: try world.key("u2"), channelKey: short, ids: nil)
            #expect(try await world.counts(in: "short") == ["u1": 1, "u2": 0, "u3": 2])
            #expect(try await world.notifications.expireNext() == nil)

            try await db.client.query("UPDATE notifications SET created_at = created_at - interval '25 hours' WHERE id = \(broadcast.id)")
            #expect(try await world.notifications.expireNext() == broadcast.id)
            #expect(try await world.notifications.expireNext() == nil, "the fresh one is within the retention")
            #expect(try await world.notifications.get(fresh.id) != nil)
            #expect(try await world.counts(in: "short") == ["u1": 0, "u2": 0, "u3": 1], "u2, who had read it, is not counted below 0")
            try await world.expectCountsMatchCopies()
            #expect(try await world.collections.unread(userKey: try world.key("u3")).total == 1)
            let tombstones = try await db.client.query(
                "SELECT count(*) FROM notification_recipients WHERE notification_id = \(broadcast.id) AND deleted"
            )[0].decode(Int64.self)
            #expect(tombstones == 3)
            #expect(try await world.notifications.foldNextBatch(size: 10) == nil, "an expired broadcast is folded no further")
        }
    }

    /// Scheduled sends that finished (sent, cancelled, failed) go once they have been finished longer
    /// than the retention; waiting ones stay however old, and so do finished ones still within it.
    @Test func finishedScheduledSendsGoAfterTheirRetention() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let schedules = ScheduleStore(client: db.client)
            var ids: [String: Int64] = [:]
            for name in ["waiting", "sent", "canceled", "failed", "recent"] {
                let outcome = try await schedules.create(
                    request: Array(#"{"targets": ["u1"], "variables": {"title": "x"}}"#.utf8),
                    channelURL: "feed",
                    templateKey: "plain",
                    audience: "targets",
                    timing: .at(Date() + 3600),
                    repeats: nil,
                    nextAt: Date() + 3600
                ) { _ in StoredResponse(status: 201, body: []) }
                guard case .created(let stored, _) = outcome else { throw CancellationError() }
                ids[name] = stored.id
            }
            for (name, state) in [("sent", "sent"), ("canceled", "canceled"), ("failed", "failed"), ("recent", "sent")] {
                try await db.client.query("UPDATE scheduled_sends SET state = \(state) WHERE id = \(ids[name]!)")
            }
            try await db.client.query("UPDATE scheduled_sends SET updated_at = now() - interval '2 hours' WHERE id <> \(ids["recent"]!)")

            #expect(try await schedules.deleteFinished(olderThan: .seconds(3 * 3600)) == 0)
            #expect(try await schedules.deleteFinished(olderThan: .seconds(3600)) == 3)
            let left = try await db.client.query("SELECT id FROM scheduled_sends ORDER BY id").map { try $0.decode(Int64.self) }
            #expect(left == [ids["waiting"]!, ids["recent"]!])
        }
    }
}

extension StoreWorld {
    /// Every user's unread count in the channel, as the store answers it.
    fileprivate func counts(in channel: String = "feed") async throws -> [String: Int64] {
        var counts: [String: Int64] = [:]
        for (user, userKey) in users {
            counts[user] = try await collections.liveState(userKey: userKey, channelKey: try channelKey(channel)).state.unreadCount
        }
        return counts
    }

    /// Every user's unread count in every channel is exactly their live unread copies there.
    fileprivate func expectCountsMatchCopies() async throws {
        for (url, channel) in channels {
            let copies: [String: Int64] = try await Dictionary(
                uniqueKeysWithValues: db.client.query(
                    """
                    SELECT u.id, count(r.user_key) FROM users u LEFT JOIN notification_recipients r
                        ON r.user_key = u.key AND r.channel_key = \(channel) AND NOT r.deleted AND r.status < 2
                    GROUP BY u.id
                    """
                ).map { try $0.decode((String, Int64).self) }
            )
            #expect(try await counts(in: url) == copies, "\(url)")
        }
    }
}
