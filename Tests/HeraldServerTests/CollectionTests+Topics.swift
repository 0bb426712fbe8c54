import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Testing

/// Sends to topics (and `exclude`) through the fan-out and folding: who gets a copy, and that every
/// unread count a user is shown stays the count of their copies batch by batch.
extension CollectionTests {
    var topicRoutes: TopicsTests { TopicsTests() }

    /// The send's answer and the admin's view of it.
    func sendToTopic(_ client: some TestClientProtocol, _ topic: String, title: String, exclude: [String] = []) async throws -> String {
        let excluded = exclude.isEmpty ? "" : #","exclude":[\#(exclude.map { "\"\($0)\"" }.joined(separator: ","))]"#
        let sent = try await topicRoutes.call(
            client,
            .post,
            "/v1/notifications",
            topicRoutes.admin,
            #"{"channel_url":"feed","template_key":"plain","topic":"\#(topic)","variables":{"title":"\#(title)"}\#(excluded)}"#,
            expect: .accepted
        )
        #expect(sent["audience"] as? String == "topic" && sent["topic"] as? String == topic)
        return try #require(sent["id"] as? String)
    }

    /// What each user is shown — the feed's unread count and the badge in a collection load, the total
    /// of `/v1/me/unread` — is the number of their unread copies.
    func expectCountsShownMatchCopies(_ client: some TestClientProtocol, _ db: TestDatabase, _ world: CollectionTests.World) async throws {
        for (id, _) in world.sessions {
            let truth = try await db.client.query(
                """
                SELECT count(*) FILTER (WHERE c.url = 'feed'), count(*) FROM notification_recipients r
                JOIN users u ON u.key = r.user_key JOIN channels c ON c.key = r.channel_key
                WHERE u.id = \(id) AND r.status < 2 AND NOT r.deleted
                """
            ).first!.decode((Int, Int).self)
            let collection = try await topicRoutes.call(client, .get, "/v1/me/channels/feed/collection", topicRoutes.user(world, id), expect: .ok)
            #expect(((collection["channel"] as? [String: Any])?["state"] as? [String: Any])?["unread_count"] as? Int == truth.0, "\(id)'s feed")
            #expect(collection["badge"] as? Int == truth.1, "\(id)'s badge")
            let unread = try await topicRoutes.call(client, .get, "/v1/me/unread", topicRoutes.user(world, id), expect: .ok)
            #expect(unread["total"] as? Int == truth.1, "\(id)'s total")
        }
    }

    /// Who has a copy of the notification.
    func holders(_ db: TestDatabase, _ id: String) async throws -> Set<String> {
        Set(
            try await db.client.query(
                "SELECT u.id FROM notification_recipients r JOIN users u ON u.key = r.user_key WHERE r.notification_id = \(Int64(id)!)"
            ).map { try $0.decode(String.self) }
        )
    }

    @Test func aTopicSendReachesSubscribersLessMutesAndExcludes() async throws {
        try await TestPostgres.withDatabase(maximumConnections: 4, cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let users = (1...9).map { "u\($0)" }
            let world = try await world(db, users: users)
            let notifications = NotificationStore(client: db.client)
            try await app(db).test(.router) { client in
                try await topicRoutes.call(client, .put, "/v1/topics/order:A-1", topicRoutes.admin, #"{"self_subscribe":true}"#, expect: .created)
                // u1…u6 subscribe; u3 mutes; u9 (beyond every subscriber) and u7, u8 do not.
                try await topicRoutes.call(
                    client,
                    .post,
                    "/v1/topics/order:A-1/subscribers",
                    topicRoutes.admin,
                    #"{"user_ids":["u1","u2","u3","u4","u5","u6"]}"#,
                    expect: .ok
                )
                try await topicRoutes.call(client, .put, "/v1/me/topics/order:A-1", topicRoutes.user(world, "u3"), #"{"muted":true}"#, expect: .ok)

                let id = try await sendToTopic(client, "order:A-1", title: "Shipped", exclude: ["u2", "nobody"])
                let pending = try await topicRoutes.call(client, .get, "/v1/notifications/\(id)", topicRoutes.admin, expect: .ok)
                #expect((pending["fanout"] as? [String: Any])?["state"] as? String == "running")
                #expect((pending["fanout"] as? [String: Any])?["audience_size"] as? Int == 4)  // six, less u3 muted and u2 excluded

                // Batch by batch, every count is the count of the copies: a user the fan-out has
                // passed without giving a copy (u2, u3, u7, u8 between subscribers) counts nothing.
                var batches = 0
                while try await notifications.fanOutNextBatch(size: 2) != nil {
                    batches += 1
                    try await CollectionTests.expectUnreadCountsMatchCopies(db)
                    try await expectCountsShownMatchCopies(client, db, world)
                }
                #expect(batches == 3)  // six subscribers, two per batch
                #expect(try await holders(db, id) == ["u1", "u4", "u5", "u6"])
                let done = try await topicRoutes.call(client, .get, "/v1/notifications/\(id)", topicRoutes.admin, expect: .ok)
                #expect((done["fanout"] as? [String: Any])?["state"] as? String == "done")
                #expect((done["fanout"] as? [String: Any])?["reached"] as? Int == 4)
                for id in users {
                    let unread = try await topicRoutes.call(client, .get, "/v1/me/unread", topicRoutes.user(world, id), expect: .ok)
                    #expect(unread["total"] as? Int == (["u1", "u4", "u5", "u6"].contains(id) ? 1 : 0), "\(id)")
                }
                // A subscriber reads it before the folding; the folding then counts what is left.
                try await topicRoutes.call(client, .post, "/v1/me/channels/feed/read", topicRoutes.user(world, "u4"), "{}", expect: .ok)
                while try await notifications.foldNextBatch(size: 3) != nil {
                    try await CollectionTests.expectUnreadCountsMatchCopies(db)
                    try await expectCountsShownMatchCopies(client, db, world)
                }
                let unfolded = try await db.client.query(
                    "SELECT count(*) FROM notifications WHERE audience <> 'targets' AND folded_through < fanout_through"
                ).first!.decode(Int.self)
                #expect(unfolded == 0)
                try await CollectionTests.expectUnreadCountsMatchCopies(db)
                let collection = try await topicRoutes.call(
                    client,
                    .get,
                    "/v1/me/channels/feed/collection",
                    topicRoutes.user(world, "u1"),
                    expect: .ok
                )
                #expect((collection["notifications"] as? [[String: Any]])?.count == 1)
                let none = try await topicRoutes.call(client, .get, "/v1/me/channels/feed/collection", topicRoutes.user(world, "u7"), expect: .ok)
                #expect((none["notifications"] as? [[String: Any]])?.isEmpty == true)

                // Deleting it gives every count back, whether folded or read.
                try await topicRoutes.call(client, .delete, "/v1/notifications/\(id)", topicRoutes.admin, expect: .noContent)
                try await CollectionTests.expectUnreadCountsMatchCopies(db)
                try await expectCountsShownMatchCopies(client, db, world)

                // A topic nobody follows is sent to nobody, and is done at once.
                try await topicRoutes.call(client, .put, "/v1/topics/empty", topicRoutes.admin, expect: .created)
                let empty = try await topicRoutes.call(
                    client,
                    .post,
                    "/v1/notifications",
                    topicRoutes.admin,
                    #"{"channel_url":"feed","template_key":"plain","topic":"empty","variables":{"title":"x"}}"#,
                    expect: .accepted
                )
                #expect((empty["fanout"] as? [String: Any])?["state"] as? String == "done")

                // Bad sends: nothing is stored.
                let before = try await db.client.query("SELECT count(*) FROM notifications").first!.decode(Int.self)
                let base = #""channel_url":"feed","template_key":"plain","variables":{"title":"x"}"#
                for (body, code) in [
                    (#"{\#(base),"topic":"missing"}"#, "unknown_topic"),
                    (#"{\#(base),"topic":"bad topic"}"#, "invalid_notification"),
                    (#"{\#(base),"topic":"order:A-1","targets":["u1"]}"#, "invalid_notification"),
                    (#"{\#(base),"topic":"order:A-1","audience":"all"}"#, "invalid_notification"),
                    (#"{\#(base),"targets":["u1"],"exclude":["u2"]}"#, "invalid_notification"),
                    (#"{\#(base),"topic":"order:A-1","exclude":[""]}"#, "invalid_notification"),
                    (#"{\#(base),"topic":"order:A-1","exclude":"u2"}"#, "invalid_json"),
                    (#"{\#(base),"topic":7}"#, "invalid_json"),
                ] {
                    try await topicRoutes.expectError(client, .post, "/v1/notifications", topicRoutes.admin, body, status: .badRequest, code: code)
                }
                #expect(try await db.client.query("SELECT count(*) FROM notifications").first!.decode(Int.self) == before)
            }
        }
    }

    @Test func anEveryoneSendLeavesOutTheExcluded() async throws {
        try await TestPostgres.withDatabase(maximumConnections: 4, cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2", "u3"])
            _ = world
            try await app(db).test(.router) { client in
                let sent = try await topicRoutes.call(
                    client,
                    .post,
                    "/v1/notifications",
                    topicRoutes.admin,
                    #"{"channel_url":"feed","template_key":"plain","audience":"all","exclude":["u2"],"variables":{"title":"x"}}"#,
                    expect: .accepted
                )
                let id = try #require(sent["id"] as? String)
                #expect((sent["fanout"] as? [String: Any])?["audience_size"] as? Int == 2)
                while try await NotificationStore(client: db.client).fanOutNextBatch(size: 2) != nil {
                    try await CollectionTests.expectUnreadCountsMatchCopies(db)
                }
                #expect(try await holders(db, id) == ["u1", "u3"])
                while try await NotificationStore(client: db.client).foldNextBatch(size: 2) != nil {}
                try await CollectionTests.expectUnreadCountsMatchCopies(db)
            }
        }
    }

    /// Users subscribing and unsubscribing while a send to the topic fans out, in small batches on
    /// another connection: the fan-out finishes, each user ends with one copy or none (never an
    /// error from a second one), users who stayed subscribed all have it, users who never were have
    /// none, and every count is the count of the copies.
    @Test func subscriptionsChangingDuringAFanOutGiveOneCopyOrNone() async throws {
        try await TestPostgres.withDatabase(maximumConnections: 6, cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let users = (1...300).map { "u\($0)" }
            _ = try await world(db, users: Array(users.prefix(2)))
            try await db.client.query("INSERT INTO users (id) SELECT 'u' || n FROM generate_series(3, 300) AS n")
            let topics = TopicStore(client: db.client)
            _ = try await topics.put(id: "busy", name: "", selfSubscribe: true)
            let steady = users.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
            let churning = users.enumerated().filter { $0.offset % 3 == 1 }.map(\.element)
            let never = Set(users.enumerated().filter { $0.offset % 3 == 2 }.map(\.element))
            _ = try await topics.addSubscribers(topic: "busy", userIDs: steady + churning)

            try await app(db).test(.router) { client in
                let id = try await sendToTopic(client, "busy", title: "Busy")
                let notifications = NotificationStore(client: db.client)
                async let churn: Void = {
                    var random = SplitMix64(seed: 20_261_127)
                    for round in 0..<40 {
                        let some = churning.filter { _ in random.next() % 2 == 0 }
                        if round % 2 == 0 {
                            _ = try await topics.removeSubscribers(topic: "busy", userIDs: some)
                        } else {
                            _ = try await topics.addSubscribers(topic: "busy", userIDs: some)
                        }
                    }
                }()
                var batches = 0
                while try await notifications.fanOutNextBatch(size: 7) != nil {
                    batches += 1
                    if batches % 5 == 0 { try await CollectionTests.expectUnreadCountsMatchCopies(db) }
                }
                try await churn
                let holders = try await holders(db, id)
                #expect(Set(steady).isSubset(of: holders))
                #expect(holders.isDisjoint(with: never))
                let done = try await topicRoutes.call(client, .get, "/v1/notifications/\(id)", topicRoutes.admin, expect: .ok)
                #expect((done["fanout"] as? [String: Any])?["state"] as? String == "done")
                #expect((done["fanout"] as? [String: Any])?["reached"] as? Int == holders.count)
                try await CollectionTests.expectUnreadCountsMatchCopies(db)
                while try await notifications.foldNextBatch(size: 50) != nil {}
                try await CollectionTests.expectUnreadCountsMatchCopies(db)
            }
        }
    }
}
