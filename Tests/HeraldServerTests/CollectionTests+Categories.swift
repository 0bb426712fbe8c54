import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOConcurrencyHelpers
import NIOCore
import Postgres
import Testing

/// A user's choices per category: who gets a copy of targeted, everyone and topic sends (set-based,
/// batch by batch with every count the count of the copies), whose alerts the choices suppress, and
/// the routes' bad input.
extension CollectionTests {
    @Test func categoryChoicesDecideWhoGetsACopyAndWhoIsAlerted() async throws {
        try await TestPostgres.withDatabase(maximumConnections: 4, cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let users = ["u1", "u2", "u3", "u4"]
            let world = try await world(db, users: users)
            let routes = topicRoutes
            // Promotions reach nobody's collection nor alert anybody unless they choose so.
            _ = try await ChannelStore(client: db.client).put(
                HeraldCore.Channel(
                    url: "feed",
                    kind: .feed,
                    name: "Feed",
                    categories: [
                        .init(id: "news", name: "News", isDefault: true), .init(id: "alerts", name: "Alerts", isDefault: false),
                        .init(id: "promo", name: "Offers", isDefault: false, inboxDefault: false, pushDefault: false),
                    ]
                )
            )
            try await app(db).test(.router) { client in
                func choose(
                    _ user: String,
                    _ category: String,
                    _ body: String,
                    expect status: HTTPResponse.Status = .ok
                ) async throws -> [String: Any] {
                    try await routes.call(client, .put, "/v1/me/channels/feed/categories/\(category)", routes.user(world, user), body, expect: status)
                }
                #expect(try await choose("u1", "news", #"{"inbox":false}"#)["inbox_chosen"] as? Bool == true)
                let u2 = try await choose("u2", "promo", #"{"inbox":true}"#)
                #expect(u2["inbox"] as? Bool == true && u2["push"] as? Bool == false && u2["push_default"] as? Bool == false)
                #expect(try await choose("u3", "news", #"{"push":false}"#)["push"] as? Bool == false)
                // Back to the default, then chosen again: nothing is left of the first choice.
                #expect(try await choose("u4", "news", #"{"inbox":false,"push":false}"#)["inbox"] as? Bool == false)
                let reset = try await choose("u4", "news", #"{"inbox":null,"push":null}"#)
                #expect(reset["inbox"] as? Bool == true && reset["inbox_chosen"] as? Bool == false)
                #expect(try await db.client.query("SELECT count(*) FROM category_preferences").first!.decode(Int.self) == 3)

                let listed = try await routes.call(client, .get, "/v1/me/channels/feed/categories", routes.user(world, "u1"), expect: .ok)
                #expect(
                    (listed["categories"] as? [[String: Any]])?.map { "\($0["id"]!) \($0["inbox"] as! Bool) \($0["push"] as! Bool)" } == [
                        "news false true", "alerts true true", "promo false false",
                    ]
                )

                // Bad input changes nothing.
                let u1 = routes.user(world, "u1")
                try await routes.expectError(
                    client,
                    .put,
                    "/v1/me/channels/feed/categories/nope",
                    u1,
                    #"{"inbox":true}"#,
                    status: .notFound,
                    code: "category_not_found"
                )
                try await routes.expectError(
                    client,
                    .put,
                    "/v1/me/channels/nope/categories/news",
                    u1,
                    #"{"inbox":true}"#,
                    status: .notFound,
                    code: "channel_not_found"
                )
                try await routes.expectError(
                    client,
                    .put,
                    "/v1/me/channels/feed/categories/news",
                    u1,
                    #"{"inbox":"no"}"#,
                    status: .badRequest,
                    code: "invalid_json"
                )
                try await routes.expectError(
                    client,
                    .put,
                    "/v1/me/channels/feed/categories/news",
                    u1,
                    #"{"mute":true}"#,
                    status: .badRequest,
                    code: "unknown_field"
                )
                try await routes.expectError(
                    client,
                    .put,
                    "/v1/me/channels/feed/categories/news",
                    u1,
                    status: .badRequest,
                    code: "invalid_category_preferences"
                )
                #expect(try await db.client.query("SELECT count(*) FROM category_preferences").first!.decode(Int.self) == 3)

                // Sends of each audience.
                try await routes.call(client, .put, "/v1/topics/all-of-us", routes.admin, expect: .created)
                try await routes.call(
                    client,
                    .post,
                    "/v1/topics/all-of-us/subscribers",
                    routes.admin,
                    #"{"user_ids":["u1","u2","u3","u4"]}"#,
                    expect: .ok
                )
                func send(_ audience: String, _ category: String) async throws -> String {
                    let sent = try await routes.call(
                        client,
                        .post,
                        "/v1/notifications",
                        routes.admin,
                        #"{"channel_url":"feed","template_key":"plain","category":"\#(category)",\#(audience),"variables":{"title":"\#(category)"},"push":{"alert":true}}"#,
                        expect: audience.contains("targets") ? .created : .accepted
                    )
                    return try #require(sent["id"] as? String)
                }
                let everyone = #""targets":["u1","u2","u3","u4"]"#
                let targetedNews = try await send(everyone, "news")
                let targetedPromo = try await send(everyone, "promo")
                let allNews = try await send(#""audience":"all""#, "news")
                let topicPromo = try await send(#""topic":"all-of-us""#, "promo")
                while try await world.notifications.fanOutNextBatch(size: 1) != nil {
                    try await CollectionTests.expectUnreadCountsMatchCopies(db)
                }
                #expect(try await holders(db, targetedNews) == ["u2", "u3", "u4"])
                #expect(try await holders(db, targetedPromo) == ["u2"])
                #expect(try await holders(db, allNews) == ["u2", "u3", "u4"])
                #expect(try await holders(db, topicPromo) == ["u2"])
                try await expectCountsShownMatchCopies(client, db, world)
                while try await world.notifications.foldNextBatch(size: 2) != nil {}
                try await CollectionTests.expectUnreadCountsMatchCopies(db)

                // Alerts: every recipient with a device is a candidate; u3 chose no pushes for news,
                // and promotions alert nobody who did not choose them.
                for user in users {
                    try await routes.call(
                        client,
                        .put,
                        "/v1/me/devices/\(String(repeating: String(user.last!), count: 64))",
                        routes.user(world, user),
                        #"{"environment":"sandbox","topic":"com.example.app"}"#,
                        expect: .created
                    )
                }
                let keys = try await db.client.query("SELECT key, id FROM users").reduce(into: [Int64: String]()) {
                    let (key, id) = try $1.decode((Int64, String).self)
                    $0[key] = id
                }
                let seen = NIOLockedValueBox<[String: Bool]>([:])
                try await db.client.query("DELETE FROM alert_outbox")
                for (id, category) in [(targetedNews, "news"), (targetedPromo, "promo")] {
                    try await db.client.query("INSERT INTO alert_outbox (notification_id) VALUES (\(Int64(id)!))")
                    _ = try await AlertStore(client: db.client).expand(limit: 10) { candidates in
                        seen.withLockedValue { seen in
                            for candidate in candidates { seen["\(keys[candidate.userKey]!) \(category)"] = candidate.categoryPush }
                        }
                        return []
                    }
                }
                #expect(seen.withLockedValue { $0 } == ["u2 news": true, "u3 news": false, "u4 news": true, "u2 promo": false])
            }
        }
    }
}
