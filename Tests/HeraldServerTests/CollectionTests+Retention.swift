import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import Postgres

/// Retention: a send's `expires_at` and a channel's `retention`. Time is made to pass by moving the
/// rows' times back, as the expiry worker only compares them with `now()`.
extension CollectionTests {
    @Test func expiredNotificationsLeaveCollectionsAsDeletedOnesDoAndCountersStayTrue() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2", "u3"])
            try await app(db).test(.router) { client in
                let admin = jsonHeaders(bearer: Self.adminToken)
                func send(_ body: String) async throws -> TestResponse {
                    try await client.execute(uri: "/v1/notifications", method: .post, headers: admin, body: ByteBuffer(string: body))
                }
                let soon = RFC3339.string(from: Date().addingTimeInterval(3600))
                let expiring = try await send(
                    #"{"channel_url":"feed","template_key":"plain","targets":["u1","u2"],"variables":{"title":"soon"},"expires_at":"\#(soon)"}"#
                )
                #expect(expiring.status == .created)
                #expect(try jsonObject(expiring)["expires_at"] as? String == soon)
                let expiringID = try #require(try jsonObject(expiring)["id"] as? String)
                let kept = try await world.send("kept", to: ["u1", "u2"])
                // A broadcast, fanned out and partly folded: both ways of counting it are in play.
                let broadcast = try await send(#"{"channel_url":"other","template_key":"plain","audience":"all","variables":{"title":"all"}}"#)
                #expect(broadcast.status == .accepted)
                let broadcastID = try #require(try jsonObject(broadcast)["id"] as? String)
                while try await world.notifications.fanOutNextBatch(size: 1) != nil {}
                _ = try await world.notifications.foldNextBatch(size: 1)
                // u2 reads everything in the feed (a read copy that expires counts nothing down).
                #expect(
                    try await client.execute(uri: "/v1/me/channels/feed/read", method: .post, headers: jsonHeaders(bearer: world.sessions["u2"]))
                        .status == .ok
                )

                let feed = try await collection(client, world.sessions["u1"])
                let feedToken = try #require(feed["next_token"] as? String)
                let other = try await collection(client, world.sessions["u3"], channel: "other")
                let otherToken = try #require(other["next_token"] as? String)
                #expect(try await world.notifications.expireNext() == nil)

                // The send's expiry passes.
                try await db.client.query("UPDATE notifications SET expires_at = now() - interval '1 second' WHERE id = \(Int64(expiringID)!)")
                #expect(try await world.notifications.expireNext() == Int64(expiringID))
                #expect(try await world.notifications.expireNext() == nil)
                let synced = try await collection(client, world.sessions["u1"], query: "?token=\(escaped(feedToken))")
                #expect(ids(synced, "deleted") == [expiringID])
                #expect(ids(synced).isEmpty)
                #expect((synced["channel"] as? [String: Any]).flatMap { ($0["state"] as? [String: Any])?["unread_count"] as? Int } == 1)
                #expect(try await client.execute(uri: "/v1/notifications/\(expiringID)", method: .get, headers: admin).status == .notFound)
                try await Self.expectUnreadCountsMatchCopies(db)

                // A channel's retention: the broadcast is older than it.
                let put = try await client.execute(
                    uri: "/v1/channels/other",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(string: #"{"kind":"feed","name":"Other","retention":"24h","categories":[{"id":"news","is_default":true}]}"#)
                )
                #expect(put.status == .ok)
                #expect(try jsonObject(put)["retention"] as? String == "1d")
                #expect(try await world.notifications.expireNext() == nil)
                let shown = try jsonObject(try await client.execute(uri: "/v1/notifications/\(broadcastID)", method: .get, headers: admin))
                let created = RFC3339.date(from: shown["created_at"] as? String ?? "")
                let until = RFC3339.date(from: shown["expires_at"] as? String ?? "")
                #expect(abs((until ?? .distantPast).timeIntervalSince(created ?? .distantFuture) - 86_400) < 0.002)
                try await db.client.query("UPDATE notifications SET created_at = created_at - interval '25 hours' WHERE id = \(Int64(broadcastID)!)")
                #expect(try await world.notifications.expireNext() == Int64(broadcastID))
                #expect(try await world.notifications.expireNext() == nil)
                let otherSynced = try await collection(client, world.sessions["u3"], channel: "other", query: "?token=\(escaped(otherToken))")
                #expect(ids(otherSynced, "deleted") == [broadcastID])
                try await Self.expectUnreadCountsMatchCopies(db)
                let unread = try jsonObject(
                    try await client.execute(uri: "/v1/me/unread", method: .get, headers: jsonHeaders(bearer: world.sessions["u3"]))
                )
                #expect(unread["total"] as? Int == 0)
                #expect(ids(try await collection(client, world.sessions["u1"])) == ["\(kept)"])

                // Compaction takes the tombstones once they are older than its retention, a batch at a
                // time, then the notifications' rows.
                let collections = CollectionStore(client: db.client)
                let first = try await collections.compact(retention: .zero, batchSize: 1)
                let pass = try #require(try await collections.compact(retention: .zero, batchSize: 1))
                // Two copies of the expired send, three of the broadcast, in batches of one.
                #expect((first?.removedTombstones ?? 0) + pass.removedTombstones == 5)
                #expect((first?.removedNotifications ?? 0) + pass.removedNotifications == 2)
                let tombstones = try await db.client.query("SELECT count(*) FROM notification_recipients WHERE deleted")[0].decode(Int.self)
                #expect(tombstones == 0)
                let rows = try await db.client.query(
                    "SELECT count(*) FROM notifications WHERE id IN (\(Int64(expiringID)!), \(Int64(broadcastID)!))"
                )[0].decode(Int.self)
                #expect(rows == 0)
                #expect(try await db.client.query("SELECT count(*) FROM notification_events")[0].decode(Int.self) == 0)
                try await Self.expectUnreadCountsMatchCopies(db)
            }
        }
    }

    @Test func retentionAndExpiryRefuseWhatTheyCannotKeep() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await world(db)
            try await app(db).test(.router) { client in
                let admin = jsonHeaders(bearer: Self.adminToken)
                for retention in [#""90x""#, #""0d""#, #""-1h""#, #""d""#, #""36601d""#, #""1.5h""#, #""h1""#] {
                    let response = try await client.execute(
                        uri: "/v1/channels/feed",
                        method: .put,
                        headers: admin,
                        body: ByteBuffer(string: #"{"kind":"feed","retention":\#(retention)}"#)
                    )
                    #expect(response.status == .badRequest, "\(retention)")
                    #expect(try errorCode(response) == "invalid_channel", "\(retention)")
                }
                for (retention, shown) in [("90d", "90d"), ("90m", "90m"), ("120m", "2h"), ("86400s", "1d")] {
                    let response = try await client.execute(
                        uri: "/v1/channels/feed",
                        method: .put,
                        headers: admin,
                        body: ByteBuffer(string: #"{"kind":"feed","retention":"\#(retention)"}"#)
                    )
                    #expect(try jsonObject(response)["retention"] as? String == shown)
                }
                // The same retention in another unit is the same definition.
                let again = try await client.execute(
                    uri: "/v1/channels/feed",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(string: #"{"kind":"feed","retention":"24h"}"#)
                )
                #expect(again.status == .ok)
                let changed = try await db.client.query("SELECT updated_at FROM channels WHERE url = 'feed'")[0].decode(Date.self)
                _ = try await client.execute(
                    uri: "/v1/channels/feed",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(string: #"{"kind":"feed","retention":"1440m"}"#)
                )
                #expect(try await db.client.query("SELECT updated_at FROM channels WHERE url = 'feed'")[0].decode(Date.self) == changed)
                let cleared = try await client.execute(
                    uri: "/v1/channels/feed",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(string: #"{"kind":"feed"}"#)
                )
                #expect(try jsonObject(cleared)["retention"] is NSNull)

                for (expiry, message) in [("2000-01-01T00:00:00Z", "in the future"), ("tomorrow", "RFC 3339")] {
                    let response = try await client.execute(
                        uri: "/v1/notifications",
                        method: .post,
                        headers: admin,
                        body: ByteBuffer(
                            string:
                                #"{"channel_url":"feed","template_key":"plain","targets":["u1"],"variables":{"title":"t"},"expires_at":"\#(expiry)"}"#
                        )
                    )
                    #expect(response.status == .badRequest)
                    #expect(try errorCode(response) == "invalid_notification")
                    let text = String(buffer: response.body)
                    #expect(text.contains("expires_at") && text.contains(message), "\(text)")
                }
                #expect(try await db.client.query("SELECT count(*) FROM notifications")[0].decode(Int.self) == 0)
            }
        }
    }
}
