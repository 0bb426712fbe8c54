import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Prometheus
import Testing

@testable import Postgres

/// The user side: collections, incremental sync, `is_live`, read and seen marks, unread counts.
@Suite("Collections", .serialized)
struct CollectionTests {
    static let adminToken = "test-admin-token-collections-0123"

    struct World {
        let client: PostgresClient
        var sessions: [String: String] = [:]
        let notifications: NotificationStore

        init(client: PostgresClient) {
            self.client = client
            notifications = NotificationStore(client: client)
        }

        /// Sends a notification (rendered from a one-variable template) to `users`; returns its id.
        @discardableResult
        func send(_ title: String, to users: [String], category: String = "news", channel: String = "feed") async throws -> Int64 {
            let template = try #require(try await TemplateStore(client: client).get("plain"))
            let content = try template.template.renderNotification(variables: ["title": .string(title)], userVariables: [:])
            let draft = NotificationDraft(
                channelURL: channel,
                templateKey: "plain",
                templateVersion: template.version,
                variables: ["title": .string(title)],
                content: content,
                category: category,
                tags: [],
                eventDeadline: nil,
                push: PushOptions(),
                audience: .targets(users)
            )
            guard
                case .created(let stored, _, _) = try await notifications.send(
                    draft,
                    idempotency: nil,
                    respond: { _ in StoredResponse(status: 201, body: []) }
                )
            else {
                throw CancellationError()
            }
            return stored.id
        }
    }

    func world(_ db: TestDatabase, users: [String] = ["u1", "u2"]) async throws -> World {
        try await world(client: db.client, users: users)
    }

    /// Channels `feed` and `other`, the template `plain`, and `users` with a session each.
    func world(client: PostgresClient, users: [String] = ["u1", "u2"]) async throws -> World {
        let categories: [HeraldCore.Channel.Category] = [
            .init(id: "news", name: "News", isDefault: true), .init(id: "alerts", name: "Alerts", isDefault: false),
        ]
        _ = try await ChannelStore(client: client).put(HeraldCore.Channel(url: "feed", kind: .feed, name: "Feed", categories: categories))
        _ = try await ChannelStore(client: client).put(HeraldCore.Channel(url: "other", kind: .feed, name: "Other", categories: categories))
        _ = try await TemplateStore(client: client).put(.plain)
        var world = World(client: client)
        for user in users {
            _ = try await UserStore(client: client).upsert(id: user, nickname: nil, profileURL: nil)
            world.sessions[user] = try #require(try await SessionStore(client: client).create(userID: user, lifetime: 3600)).token.text
        }
        return world
    }

    func app(_ db: TestDatabase, hugeGap: Int = 300) throws -> some ApplicationProtocol {
        let dependencies = HeraldApplication.Dependencies(
            client: db.client,
            migrator: Migrator(client: db.client, migrations: try TestPostgres.repositoryMigrations()),
            metricsRegistry: PrometheusCollectorRegistry(),
            adminToken: Self.adminToken,
            sync: SyncSettings(hugeGap: hugeGap)
        )
        return Application(router: HeraldApplication.buildRouter(dependencies).router)
    }

    /// GET a collection; returns the JSON object.
    func collection(_ client: some TestClientProtocol, _ session: String?, channel: String = "feed", query: String = "") async throws -> [String: Any]
    {
        let response = try await client.execute(
            uri: "/v1/me/channels/\(channel)/collection\(query)",
            method: .get,
            headers: jsonHeaders(bearer: session)
        )
        #expect(response.status == .ok, "\(String(buffer: response.body))")
        return try jsonObject(response)
    }

    func ids(_ body: [String: Any], _ key: String = "notifications") -> [String] {
        if key == "deleted" { return body[key] as? [String] ?? [] }
        return (body[key] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    func escaped(_ token: String) -> String {
        token.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_"))) ?? token
    }

    @Test func initialLoadThenIncrementalChangesWithUnreadAndBadge() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            let first = try await world.send("one", to: ["u1", "u2"])
            let second = try await world.send("two", to: ["u1"])
            try await world.send("elsewhere", to: ["u1"], channel: "other")
            try await app(db).test(.router) { client in
                let session = world.sessions["u1"]!
                let initial = try await collection(client, session)
                #expect(initial["is_live"] as? Bool == true)
                #expect(ids(initial) == ["\(second)", "\(first)"])
                let state = (initial["channel"] as? [String: Any])?["state"] as? [String: Any]
                #expect(state?["unread_count"] as? Int == 2)
                #expect(initial["badge"] as? Int == 3)
                let item = try #require((initial["notifications"] as? [[String: Any]])?.first)
                #expect(item["status"] as? String == "SENT")
                #expect((item["data"] as? [String: Any])?["title"] as? String == "two")
                let token = try #require(initial["next_token"] as? String)

                // Nothing happened: nothing to apply, still live.
                let quiet = try await collection(client, session, query: "?token=\(escaped(token))")
                #expect(quiet["is_live"] as? Bool == true)
                #expect(ids(quiet).isEmpty && ids(quiet, "deleted").isEmpty)

                // An update, a delete, a new notification and a read all show up as changes.
                let third = try await world.send("three", to: ["u1"])
                _ = try await world.notifications.update(
                    first,
                    variables: ["title": .string("one, corrected")],
                    content: try Template(
                        key: "plain",
                        name: "",
                        variables: [.init(name: "title", type: .string)],
                        data: .object(["title": .string("{{title}}")])
                    )
                    .renderNotification(variables: ["title": .string("one, corrected")], userVariables: [:])
                )
                #expect(try await world.notifications.delete(second))
                let read = try await client.execute(
                    uri: "/v1/me/channels/feed/read",
                    method: .post,
                    headers: jsonHeaders(bearer: session),
                    body: ByteBuffer(string: #"{"notification_ids":["\#(third)"]}"#)
                )
                #expect(try jsonObject(read)["unread_count"] as? Int == 1)

                let changes = try await collection(client, session, query: "?token=\(escaped(token))")
                #expect(changes["is_live"] as? Bool == true)
                #expect(Set(ids(changes)) == ["\(first)", "\(third)"])
                #expect(ids(changes, "deleted") == ["\(second)"])
                let byID = Dictionary(uniqueKeysWithValues: (changes["notifications"] as! [[String: Any]]).map { ($0["id"] as! String, $0) })
                #expect((byID["\(first)"]?["data"] as? [String: Any])?["title"] as? String == "one, corrected")
                #expect(byID["\(third)"]?["status"] as? String == "READ")
                #expect(((changes["channel"] as? [String: Any])?["state"] as? [String: Any])?["unread_count"] as? Int == 1)
                #expect(changes["badge"] as? Int == 2)

                let unread = try await client.execute(uri: "/v1/me/unread", method: .get, headers: jsonHeaders(bearer: session))
                let unreadBody = try jsonObject(unread)
                #expect(unreadBody["total"] as? Int == 2)
            }
        }
    }

    @Test func aChangeThatCommitsLateIsNeverSkipped() async throws {
        try await TestPostgres.withDatabase(maximumConnections: 4, cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            let early = try await world.send("early", to: ["u1"])
            try await app(db).test(.router) { client in
                let session = world.sessions["u1"]!
                let token = try #require(try await collection(client, session)["next_token"] as? String)
                let userKey = try await db.client.query("SELECT key FROM users WHERE id = 'u1'").first!.decode(Int64.self)

                // Transaction A takes its position (its transaction id) first and stays open…
                try await db.client.withConnection { held in
                    try await held.query("BEGIN")
                    let xidA = try await held.query("SELECT pg_current_xact_id()::text::bigint").first!.decode(Int64.self)
                    try await held.query(
                        "UPDATE notification_recipients SET status = 1, change_xid = \(xidA) WHERE user_key = \(userKey) AND notification_id = \(early)"
                    )
                    // …while transaction B makes a later change and commits.
                    let late = try await world.send("late", to: ["u1"])
                    let xidB = try await db.client.query("SELECT max(change_xid) FROM notification_recipients WHERE notification_id = \(late)").first!
                        .decode(Int64.self)
                    #expect(xidB > xidA)

                    // The sync must not move the client past A's change: B's change waits too. (It may
                    // repeat older changes, which a client applies idempotently.)
                    let during = try await collection(client, session, query: "?token=\(escaped(token))")
                    #expect(during["is_live"] as? Bool == true)
                    #expect(!ids(during).contains("\(late)"))
                    let heldToken = try #require(during["next_token"] as? String)

                    try await held.query("COMMIT")

                    // Once A commits, the next sync from the token handed out meanwhile returns both.
                    let after = try await collection(client, session, query: "?token=\(escaped(heldToken))")
                    #expect(after["is_live"] as? Bool == true)
                    #expect(Set(ids(after)) == ["\(early)", "\(late)"])
                    let statuses = (after["notifications"] as? [[String: Any]] ?? []).map { $0["status"] as? String }
                    #expect(statuses.contains("DELIVERED"))
                }
            }
        }
    }

    @Test func tokensThatCannotContinueAreNotLiveAndAFreshStartIsConsistent() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            try await world.send("one", to: ["u1", "u2"])
            try await app(db, hugeGap: 5).test(.router) { client in
                let session = world.sessions["u1"]!
                let token = try #require(try await collection(client, session)["next_token"] as? String)
                let otherUsersToken = try #require(try await collection(client, world.sessions["u2"]!)["next_token"] as? String)
                let otherChannelToken = try #require(try await collection(client, session, channel: "other")["next_token"] as? String)
                let filteredToken = try #require(try await collection(client, session, query: "?category=alerts")["next_token"] as? String)
                var forged = Array(token.utf8)
                forged[10] = forged[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
                let key = try await SettingsStore(client: db.client).syncTokenKey()
                let decoded = try #require(SyncToken(decoding: token, key: key))
                var fromTheFuture = decoded
                fromTheFuture.position = .through(xid: decoded.position.xid + 1_000_000)

                func isLive(_ token: String, query extra: String = "", session: String? = nil) async throws -> Bool {
                    let body = try await collection(client, session ?? world.sessions["u1"]!, query: "?token=\(escaped(token))\(extra)")
                    let live = body["is_live"] as? Bool
                    if live == false {
                        // No partial changes with a dead token.
                        #expect(ids(body).isEmpty && ids(body, "deleted").isEmpty)
                        #expect(body["next_token"] is NSNull)
                    }
                    return live ?? false
                }
                #expect(try await isLive(token))
                #expect(try await !isLive("not a token"))
                #expect(try await !isLive(String(decoding: forged, as: UTF8.self)))
                #expect(try await !isLive(otherUsersToken))
                #expect(try await !isLive(otherChannelToken))
                #expect(try await !isLive(filteredToken))
                #expect(try await !isLive(token, query: "&category=alerts"))
                #expect(try await !isLive(fromTheFuture.encoded(key: key)))

                // Older than the retained history.
                let horizon = decoded.position.xid + 1
                var compacted: [UInt8] = []
                withUnsafeBytes(of: horizon.bigEndian) { compacted.append(contentsOf: $0) }
                try await db.client.query("INSERT INTO herald_settings (name, value) VALUES ('compacted_through', \(PostgresBytes(compacted)))")
                #expect(try await !isLive(token))
                try await db.client.query("DELETE FROM herald_settings WHERE name = 'compacted_through'")
                #expect(try await isLive(token))

                // More pending changes than the huge-gap threshold (5 here).
                for index in 0..<6 { try await world.send("n\(index)", to: ["u1"]) }
                #expect(try await !isLive(token))

                // An admin reset of the user's channel.
                let fresh = try #require(try await collection(client, session)["next_token"] as? String)
                #expect(try await isLive(fresh))
                let userKey = try await db.client.query("SELECT key FROM users WHERE id = 'u1'").first!.decode(Int64.self)
                let channelKey = try await db.client.query("SELECT key FROM channels WHERE url = 'feed'").first!.decode(Int64.self)
                try await CollectionStore(client: db.client).reset(userKey: userKey, channelKey: channelKey)
                #expect(try await !isLive(fresh))

                // Starting over gives the consistent picture: the reset emptied the collection.
                let restart = try await collection(client, session)
                #expect(restart["is_live"] as? Bool == true)
                #expect(ids(restart).isEmpty)
                #expect(((restart["channel"] as? [String: Any])?["state"] as? [String: Any])?["unread_count"] as? Int == 0)
            }
        }
    }

    @Test func pagingBackwardsThrough250NotificationsAndFilteringByCategory() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            var sending: [Int64] = []
            for index in 0..<250 {
                sending.append(try await world.send("n\(index)", to: ["u1"], category: index.isMultiple(of: 5) ? "alerts" : "news"))
            }
            let sent = sending
            try await app(db).test(.router) { client in
                let session = world.sessions["u1"]!
                var seen: [String] = []
                var page = try await collection(client, session, query: "?limit=100")
                seen += ids(page)
                while let cursor = page["prev_cursor"] as? String {
                    let response = try await client.execute(
                        uri: "/v1/me/channels/feed/notifications?limit=100&before=\(cursor)",
                        method: .get,
                        headers: jsonHeaders(bearer: session)
                    )
                    page = try jsonObject(response)
                    seen += ids(page)
                }
                #expect(seen == sent.reversed().map(String.init))

                let alerts = try await collection(client, session, query: "?category=alerts&limit=100")
                #expect(ids(alerts) == sent.enumerated().filter { $0.offset.isMultiple(of: 5) }.map { String($0.element) }.reversed())
                #expect(alerts["prev_cursor"] is NSNull)
            }
        }
    }

    @Test func twoDevicesMarkingReadAtOnceConvergeAndLastReadNeverGoesBack() async throws {
        try await TestPostgres.withDatabase(maximumConnections: 6, cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            var sending: [Int64] = []
            for index in 0..<20 { sending.append(try await world.send("n\(index)", to: ["u1"])) }
            let sent = sending
            try await app(db).test(.router) { client in
                let session = world.sessions["u1"]!
                let bodies = [
                    #"{"notification_ids":[\#(sent[0..<12].map { "\"\($0)\"" }.joined(separator: ","))]}"#,
                    #"{"notification_ids":[\#(sent[6..<20].map { "\"\($0)\"" }.joined(separator: ","))]}"#,
                    "", #"{"notification_ids":["\#(sent[3])"]}"#,
                ]
                let answers = try await withThrowingTaskGroup(of: Int?.self) { group in
                    for body in bodies {
                        group.addTask {
                            let response = try await client.execute(
                                uri: "/v1/me/channels/feed/read",
                                method: .post,
                                headers: jsonHeaders(bearer: session),
                                body: ByteBuffer(string: body)
                            )
                            return try jsonObject(response)["unread_count"] as? Int
                        }
                    }
                    return try await group.reduce(into: [Int?]()) { $0.append($1) }
                }
                #expect(answers.count == 4)
                #expect(answers.allSatisfy { ($0 ?? -1) >= 0 })
                let state = ((try await collection(client, session))["channel"] as? [String: Any])?["state"] as? [String: Any]
                #expect(state?["unread_count"] as? Int == 0)
                let lastRead = try #require(state?["last_read_at"] as? String)

                // Marking specific ids later does not move last_read_at back or anywhere.
                let again = try await client.execute(
                    uri: "/v1/me/channels/feed/read",
                    method: .post,
                    headers: jsonHeaders(bearer: session),
                    body: ByteBuffer(string: #"{"notification_ids":["\#(sent[0])"]}"#)
                )
                #expect(try jsonObject(again)["last_read_at"] as? String == lastRead)
                let truth = try await db.client.query(
                    "SELECT count(*) FROM notification_recipients r JOIN users u ON u.key = r.user_key WHERE u.id = 'u1' AND r.status < 2 AND NOT r.deleted"
                ).first!.decode(Int.self)
                #expect(truth == 0)
            }
        }
    }

    @Test func usersOnlyEverSeeTheirOwnCollections() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            let secret = try await world.send("for u1 only", to: ["u1"])
            try await app(db).test(.router) { client in
                let mine = try await collection(client, world.sessions["u1"]!)
                #expect(ids(mine) == ["\(secret)"])
                let theirs = try await collection(client, world.sessions["u2"]!)
                #expect(ids(theirs).isEmpty)
                // u1's token in u2's hands continues nothing.
                let stolen = try await collection(client, world.sessions["u2"]!, query: "?token=\(escaped(mine["next_token"] as! String))")
                #expect(stolen["is_live"] as? Bool == false)
                #expect(ids(stolen).isEmpty)
                // No session, the admin token, or a revoked session: 401.
                for bearer in [nil, Self.adminToken] {
                    let response = try await client.execute(
                        uri: "/v1/me/channels/feed/collection",
                        method: .get,
                        headers: jsonHeaders(bearer: bearer)
                    )
                    #expect(response.status == .unauthorized)
                }
                _ = try await SessionStore(client: db.client).revokeAll(userID: "u1")
                let revoked = try await client.execute(uri: "/v1/me/unread", method: .get, headers: jsonHeaders(bearer: world.sessions["u1"]!))
                #expect(revoked.status == .unauthorized)
                let unknown = try await client.execute(
                    uri: "/v1/me/channels/nope/collection",
                    method: .get,
                    headers: jsonHeaders(bearer: world.sessions["u2"]!)
                )
                #expect(unknown.status == .notFound)
            }
        }
    }

    @Test func lookupsSentWithTheSessionCheckShareItsRoundTripAndOnlyEverAnswerForTheirUser() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            let token = try await app(db).test(.router) { client in
                try #require(try await collection(client, world.sessions["u1"]!)["next_token"] as? String)
            }
            try await world.send("for u1 only", to: ["u1"])
            try await app(db).test(.router) { client in
                func state(_ body: [String: Any]) -> [String: Any]? { (body["channel"] as? [String: Any])?["state"] as? [String: Any] }
                // The owner's poll: the session check and the poll went to the server in one round trip.
                let shared = db.client.batchCounts.roundTripsShared
                let mine = try await collection(client, world.sessions["u1"]!, query: "?token=\(escaped(token))")
                #expect(db.client.batchCounts.roundTripsShared == shared + 1)
                #expect(mine["is_live"] as? Bool == true)
                #expect(ids(mine).count == 1)
                #expect(state(mine)?["unread_count"] as? Int == 1 && mine["badge"] as? Int == 1)
                // The same token with another user's session: the poll read for u1 is thrown away, and u2
                // gets u2's own state, not live.
                let stolen = try await collection(client, world.sessions["u2"]!, query: "?token=\(escaped(token))")
                #expect(stolen["is_live"] as? Bool == false)
                #expect(ids(stolen).isEmpty && ids(stolen, "deleted").isEmpty)
                #expect(state(stolen)?["unread_count"] as? Int == 0 && stolen["badge"] as? Int == 0)
                // Routes that start with the channel by URL send that lookup with the session check (it
                // reads nothing of any user's): first loads, older pages, the marks, the channel's push
                // preference. An unknown channel is
                // still a 404.
                for (method, path, status) in [
                    (HTTPRequest.Method.get, "/v1/me/channels/feed/collection", HTTPResponse.Status.ok),
                    (.get, "/v1/me/channels/feed/notifications", .ok),
                    (.post, "/v1/me/channels/feed/seen", .ok),
                    (.post, "/v1/me/channels/feed/read", .ok),
                    (.get, "/v1/me/channels/feed/push-preferences", .ok),
                    (.post, "/v1/me/channels/nope/read", .notFound),
                ] {
                    let before = db.client.batchCounts.roundTripsShared
                    let response = try await client.execute(uri: path, method: method, headers: jsonHeaders(bearer: world.sessions["u2"]!))
                    #expect(response.status == status, "\(method) \(path): \(String(buffer: response.body))")
                    #expect(db.client.batchCounts.roundTripsShared == before + 1, "\(method) \(path)")
                }
                let unknown = try await client.execute(
                    uri: "/v1/me/channels/nope/read",
                    method: .post,
                    headers: jsonHeaders(bearer: world.sessions["u2"]!)
                )
                #expect(try errorCode(unknown) == "channel_not_found")
                // A revoked session with a valid token, or none at all: 401, and nothing of the poll or the
                // channel.
                _ = try await SessionStore(client: db.client).revokeAll(userID: "u1")
                for bearer in [world.sessions["u1"]!, nil] {
                    for uri in ["/v1/me/channels/feed/collection?token=\(escaped(token))", "/v1/me/channels/feed/collection"] {
                        let response = try await client.execute(uri: uri, method: .get, headers: jsonHeaders(bearer: bearer))
                        #expect(response.status == .unauthorized)
                        #expect(try errorCode(response) == "unauthorized")
                        #expect(try jsonObject(response)["notifications"] == nil && jsonObject(response)["channel"] == nil)
                    }
                }
            }
        }
    }

    /// On a server that listens (its connections' tasks on the database threads), a poll's session
    /// check and poll go out together and answer the token's user, and a token under another user's
    /// session still reads nothing of the token's user.
    @Test func aListeningServersPollAnswersOnlyTheTokensUser() async throws {
        // On the cluster of its suite: its incremental poll must see the send it just made.
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            let app = HeraldApplication.build(
                try heraldDependencies(db, adminToken: Self.adminToken),
                host: "127.0.0.1",
                port: 0,
                logger: Logger(label: "test.collections")
            )
            try await app.test(.live) { client in
                let first = try await collection(client, world.sessions["u1"]!)
                let token = escaped(try #require(first["next_token"] as? String))
                try await world.send("for u1 only", to: ["u1"])
                let mine = try await collection(client, world.sessions["u1"]!, query: "?token=\(token)")
                #expect(mine["is_live"] as? Bool == true)
                #expect(ids(mine).count == 1)
                let stolen = try await collection(client, world.sessions["u2"]!, query: "?token=\(token)")
                #expect(stolen["is_live"] as? Bool == false)
                #expect(ids(stolen).isEmpty)
            }
        }
    }

    @Test func channelListShowsChatByActivityWithLastNotificationAndFeedsWithUnread() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            _ = try await ChannelStore(client: db.client).put(
                HeraldCore.Channel(url: "support", kind: .chat, name: "Support", coverURL: "https://example.com/s.png")
            )
            _ = try await ChannelStore(client: db.client).put(HeraldCore.Channel(url: "sales", kind: .chat, name: "Sales"))
            let salesHello = try await world.send("hello from sales", to: ["u1"], category: "", channel: "sales")
            try await world.send("first", to: ["u1"], category: "", channel: "support")
            let last = try await world.send("latest support message", to: ["u1"], category: "", channel: "support")
            try await world.send("news", to: ["u1"])
            try await app(db).test(.router) { client in
                // Opening a channel puts it in the list even without notifications.
                _ = try await collection(client, world.sessions["u1"]!, channel: "other")
                let response = try await client.execute(uri: "/v1/me/channels", method: .get, headers: jsonHeaders(bearer: world.sessions["u1"]!))
                let body = try jsonObject(response)
                let chat = try #require(body["chat"] as? [[String: Any]])
                #expect(chat.map { $0["channel_url"] as? String } == ["support", "sales"])
                #expect(chat.first?["unread_count"] as? Int == 2)
                #expect(chat.first?["cover_url"] as? String == "https://example.com/s.png")
                let lastNotification = chat.first?["last_notification"] as? [String: Any]
                #expect(lastNotification?["id"] as? String == "\(last)")
                #expect((lastNotification?["data"] as? [String: Any])?["title"] as? String == "latest support message")
                let feed = try #require(body["feed"] as? [[String: Any]])
                #expect(feed.map { $0["channel_url"] as? String } == ["feed", "other"])
                #expect(feed.map { $0["unread_count"] as? Int } == [1, 0])
                #expect(feed.first?["last_notification"] == nil)
                // Another user sees none of it.
                let theirs = try jsonObject(
                    try await client.execute(uri: "/v1/me/channels", method: .get, headers: jsonHeaders(bearer: world.sessions["u2"]!))
                )
                #expect((theirs["chat"] as? [Any])?.isEmpty == true)
                #expect((theirs["feed"] as? [Any])?.isEmpty == true)

                // A channel whose only notification is deleted leaves the list of a user who never
                // opened it (and its count the badge), but stays for one who did.
                let lone = try await world.send("only one", to: ["u1", "u2"], category: "", channel: "sales")
                _ = try await collection(client, world.sessions["u2"]!, channel: "sales")
                #expect(try await world.notifications.delete(lone))
                #expect(try await world.notifications.delete(salesHello))
                for (user, expected) in [("u1", ["support"]), ("u2", ["sales"])] {
                    let list = try jsonObject(
                        try await client.execute(uri: "/v1/me/channels", method: .get, headers: jsonHeaders(bearer: world.sessions[user]!))
                    )
                    #expect((list["chat"] as? [[String: Any]])?.map { $0["channel_url"] as? String } == expected, "\(user)")
                    let unread = try jsonObject(
                        try await client.execute(uri: "/v1/me/unread", method: .get, headers: jsonHeaders(bearer: world.sessions[user]!))
                    )
                    #expect(
                        (unread["channels"] as? [[String: Any]])?.contains { $0["channel_url"] as? String == "sales" } == (user == "u2"),
                        "\(user)"
                    )
                }
            }
        }
    }

    @Test func adminResetAndCompactionEndLiveTokens() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            let gone = try await world.send("to be deleted", to: ["u1"])
            try await world.send("stays", to: ["u1"])
            try await app(db).test(.router) { client in
                let session = world.sessions["u1"]!
                let token = try #require(try await collection(client, session)["next_token"] as? String)
                #expect(try await world.notifications.delete(gone))
                #expect(try await db.client.query("SELECT count(*) FROM notification_recipients WHERE deleted").first!.decode(Int.self) == 1)

                // The first pass only records where the history stands; the next one (retention 0)
                // removes the tombstone and makes older tokens non-live.
                let store = CollectionStore(client: db.client)
                _ = try await store.compact(retention: .zero)
                let pass = try #require(try await store.compact(retention: .zero))
                #expect(pass.removedTombstones == 1)
                #expect(try await db.client.query("SELECT count(*) FROM notification_recipients WHERE deleted").first!.decode(Int.self) == 0)
                let stale = try await collection(client, session, query: "?token=\(escaped(token))")
                #expect(stale["is_live"] as? Bool == false)
                let restart = try await collection(client, session)
                #expect(ids(restart).count == 1)
                let fresh = try #require(restart["next_token"] as? String)
                #expect(try await collection(client, session, query: "?token=\(escaped(fresh))")["is_live"] as? Bool == true)

                // The admin reset route: the collection empties, old tokens end, unread is 0.
                let reset = try await client.execute(
                    uri: "/v1/users/u1/channels/feed/reset",
                    method: .post,
                    headers: jsonHeaders(bearer: Self.adminToken)
                )
                #expect(reset.status == .noContent)
                #expect(try await collection(client, session, query: "?token=\(escaped(fresh))")["is_live"] as? Bool == false)
                let after = try await collection(client, session)
                #expect(ids(after).isEmpty)
                #expect(((after["channel"] as? [String: Any])?["state"] as? [String: Any])?["unread_count"] as? Int == 0)
                let unknown = try await client.execute(
                    uri: "/v1/users/nobody/channels/feed/reset",
                    method: .post,
                    headers: jsonHeaders(bearer: Self.adminToken)
                )
                #expect(unknown.status == .notFound)
                // The id is percent-decoded like every other route's: `u%31` is u1, and a malformed
                // encoding or id is a 400, never another user.
                let encoded = try await client.execute(
                    uri: "/v1/users/u%31/channels/feed/reset",
                    method: .post,
                    headers: jsonHeaders(bearer: Self.adminToken)
                )
                #expect(encoded.status == .noContent)
                for bad in ["u%ZZ", "u%0A1"] {
                    let malformed = try await client.execute(
                        uri: "/v1/users/\(bad)/channels/feed/reset",
                        method: .post,
                        headers: jsonHeaders(bearer: Self.adminToken)
                    )
                    #expect(malformed.status == .badRequest, "\(bad)")
                    #expect(try errorCode(malformed) == "invalid_user_id")
                }
                let asUser = try await client.execute(uri: "/v1/users/u1/channels/feed/reset", method: .post, headers: jsonHeaders(bearer: session))
                #expect(asUser.status == .forbidden)
            }
        }
    }

    @Test func notificationDataReachesTheClientExactly() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            let tricky = #"Quotes " and \ backslash, ünïcödé 🎉, a lookalike "herald-raw-0" and {"json": [1]}"#
            try await world.send(tricky, to: ["u1"])
            try await app(db).test(.router) { client in
                let body = try await collection(client, world.sessions["u1"]!)
                let item = try #require((body["notifications"] as? [[String: Any]])?.first)
                #expect((item["data"] as? [String: Any])?["title"] as? String == tricky)
                let channels = try jsonObject(
                    try await client.execute(uri: "/v1/me/channels", method: .get, headers: jsonHeaders(bearer: world.sessions["u1"]!))
                )
                #expect((channels["feed"] as? [[String: Any]])?.first?["unread_count"] as? Int == 1)
            }
        }
    }
}
