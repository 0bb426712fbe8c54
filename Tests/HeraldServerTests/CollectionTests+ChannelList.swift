import Foundation
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import Postgres

/// The channel list's change log (`GET /v1/me/channels?token=`). Part of the `Collections` suite, on
/// its horizon-sensitive cluster, for the same reason as the model test: an open transaction anywhere
/// holds back what a change log may return.
extension CollectionTests {
    /// What a client keeps of a list entry.
    struct ListedChannel: Equatable, CustomStringConvertible {
        var kind: String
        var name: String
        var coverURL: String
        var unread: Int
        var lastNotification: String?
        var lastTitle: String?
        var description: String { "\(kind) \(name) unread \(unread) last \(lastNotification ?? "-")/\(lastTitle ?? "-")" }

        init(_ entry: [String: Any]) {
            kind = entry["kind"] as? String ?? "?"
            name = entry["name"] as? String ?? "?"
            coverURL = entry["cover_url"] as? String ?? "?"
            unread = entry["unread_count"] as? Int ?? -1
            let last = entry["last_notification"] as? [String: Any]
            lastNotification = last?["id"] as? String
            lastTitle = (last?["data"] as? [String: Any])?["title"] as? String
        }
    }

    /// A client's copy of its channel list, kept by the change log.
    struct ListClient {
        var session: String
        var token: String?
        var channels: [String: ListedChannel] = [:]
        var restarts = 0
    }

    func channelList(_ client: some TestClientProtocol, _ session: String, token: String? = nil) async throws -> [String: Any] {
        let query = token.map { "?token=\(escaped($0))" } ?? ""
        let response = try await client.execute(uri: "/v1/me/channels\(query)", method: .get, headers: jsonHeaders(bearer: session))
        #expect(response.status == .ok, "\(String(buffer: response.body))")
        return try jsonObject(response)
    }

    static func entries(_ body: [String: Any]) -> [String: ListedChannel] {
        var found: [String: ListedChannel] = [:]
        for entry in (body["chat"] as? [[String: Any]] ?? []) + (body["feed"] as? [[String: Any]] ?? []) {
            let url = entry["channel_url"] as! String
            #expect(found[url] == nil, "\(url) listed twice")
            found[url] = ListedChannel(entry)
        }
        return found
    }

    /// One change log call applied as a client would (a fresh load when it has no token or the token
    /// is no longer live). Returns the body.
    @discardableResult
    func sync(_ list: inout ListClient, _ client: some TestClientProtocol) async throws -> [String: Any] {
        guard let token = list.token else {
            let body = try await channelList(client, list.session)
            #expect(body["is_live"] as? Bool == true)
            list.channels = Self.entries(body)
            list.token = body["next_token"] as? String
            list.restarts += 1
            return body
        }
        let body = try await channelList(client, list.session, token: token)
        guard body["is_live"] as? Bool == true else {
            #expect(Self.entries(body).isEmpty && (body["deleted"] as? [String])?.isEmpty == true && body["next_token"] is NSNull)
            list.token = nil
            return body
        }
        let changed = Self.entries(body)
        for url in body["deleted"] as? [String] ?? [] {
            #expect(changed[url] == nil, "\(url) both changed and deleted")
            list.channels[url] = nil
        }
        list.channels.merge(changed) { $1 }
        list.token = try #require(body["next_token"] as? String)
        return body
    }

    /// Syncs, then expects the client's copy to equal a fresh load of the list.
    func expectInStep(_ list: inout ListClient, _ client: some TestClientProtocol, _ what: String) async throws {
        try await sync(&list, client)
        if list.token == nil { try await sync(&list, client) }
        let truth = Self.entries(try await channelList(client, list.session))
        #expect(list.channels == truth, "\(what): the change log's copy differs from a fresh load")
    }

    @Test func theChannelListsChangeLogReportsEveryKindOfChangeAndOnlyThose() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2", "u3"])
            let channels = ChannelStore(client: db.client)
            _ = try await channels.put(HeraldCore.Channel(url: "support", kind: .chat, name: "Support"))
            _ = try await channels.put(HeraldCore.Channel(url: "sales", kind: .chat, name: "Sales"))
            try await world.send("hello", to: ["u1"], category: "", channel: "support")
            try await app(db).test(.router) { client in
                var mine = ListClient(session: world.sessions["u1"]!)
                var theirs = ListClient(session: world.sessions["u2"]!)
                try await sync(&mine, client)
                try await sync(&theirs, client)
                #expect(Set(mine.channels.keys) == ["support"])

                /// The URLs a change log call reports as changed and as deleted.
                func changes(_ list: inout ListClient) async throws -> (changed: Set<String>, deleted: Set<String>) {
                    let body = try await sync(&list, client)
                    #expect(body["is_live"] as? Bool == true)
                    return (Set(Self.entries(body).keys), Set(body["deleted"] as? [String] ?? []))
                }

                // Quiet: nothing.
                #expect(try await changes(&mine) == ([], []))

                // A new notification changes its channel's entry (unread, last notification), no other.
                let second = try await world.send("second", to: ["u1"], category: "", channel: "support")
                #expect(try await changes(&mine) == (["support"], []))
                #expect(mine.channels["support"]?.unread == 2)
                #expect(mine.channels["support"]?.lastNotification == "\(second)")
                #expect(try await changes(&theirs) == ([], []))

                // Opening a channel adds it; opening it again changes nothing. A seen mark opens too,
                // here a channel the user has a state in (from a notification since deleted) but never
                // opened.
                _ = try await collection(client, mine.session, channel: "other")
                #expect(try await changes(&mine) == (["other"], []))
                _ = try await collection(client, mine.session, channel: "other")
                #expect(try await changes(&mine) == ([], []))
                let gone = try await world.send("gone", to: ["u1"])
                #expect(try await changes(&mine) == (["feed"], []))
                #expect(try await world.notifications.delete(gone))
                #expect(try await changes(&mine) == ([], ["feed"]))
                let seen = try await client.execute(uri: "/v1/me/channels/feed/seen", method: .post, headers: jsonHeaders(bearer: mine.session))
                #expect(seen.status == .ok)
                #expect(try await changes(&mine) == (["feed"], []))
                _ = try await client.execute(uri: "/v1/me/channels/feed/seen", method: .post, headers: jsonHeaders(bearer: mine.session))
                #expect(try await changes(&mine) == ([], []))

                // A renamed channel changes the entries of those who list it, no one else's.
                _ = try await channels.put(HeraldCore.Channel(url: "support", kind: .chat, name: "Help", coverURL: "https://example.com/h.png"))
                #expect(try await changes(&mine) == (["support"], []))
                #expect(mine.channels["support"]?.name == "Help" && mine.channels["support"]?.coverURL == "https://example.com/h.png")
                #expect(try await changes(&theirs) == ([], []))
                // A PUT that changes nothing is no change.
                _ = try await channels.put(HeraldCore.Channel(url: "support", kind: .chat, name: "Help", coverURL: "https://example.com/h.png"))
                #expect(try await changes(&mine) == ([], []))

                // Reading, and an admin's edit of the last notification.
                let read = try await client.execute(uri: "/v1/me/channels/support/read", method: .post, headers: jsonHeaders(bearer: mine.session))
                #expect(read.status == .ok)
                #expect(try await changes(&mine) == (["support"], []))
                #expect(mine.channels["support"]?.unread == 0)
                let template = try #require(try await TemplateStore(client: db.client).get("plain")).template
                let content = try template.renderNotification(variables: ["title": .string("edited")], userVariables: [:])
                _ = try await world.notifications.update(second, variables: ["title": .string("edited")], content: content)
                #expect(try await changes(&mine) == (["support"], []))
                #expect(mine.channels["support"]?.lastTitle == "edited")

                // A channel the user never opened leaves the list with its last notification…
                let lone = try await world.send("lone", to: ["u1", "u2"], category: "", channel: "sales")
                #expect(try await changes(&mine) == (["sales"], []))
                #expect(try await changes(&theirs) == (["sales"], []))
                _ = try await collection(client, theirs.session, channel: "sales")
                #expect(try await changes(&theirs) == (["sales"], []))
                #expect(try await world.notifications.delete(lone))
                #expect(try await changes(&mine) == ([], ["sales"]))
                // …but stays, emptied, for one who opened it.
                #expect(try await changes(&theirs) == (["sales"], []))
                #expect(theirs.channels["sales"]?.lastNotification == nil)

                // A deleted channel leaves every list it was in. Every user who had anything in it is
                // told, so that a client that has not synced since the channel left its list cannot keep
                // it: u1 hears of it again (a removal of what it does not have costs it nothing); u3,
                // who never had anything there, does not.
                var stranger = ListClient(
                    session: try #require(try await SessionStore(client: db.client).create(userID: "u3", lifetime: 3600)).token.text
                )
                try await sync(&stranger, client)
                #expect(try await channels.delete("sales"))
                #expect(try await changes(&theirs) == ([], ["sales"]))
                #expect(try await changes(&mine) == ([], ["sales"]))
                #expect(try await changes(&stranger) == ([], []))
                // Made again under the same URL, it comes back as a change, not as a removal.
                _ = try await channels.put(HeraldCore.Channel(url: "sales", kind: .chat, name: "Sales again"))
                try await world.send("back", to: ["u2"], category: "", channel: "sales")
                #expect(try await changes(&theirs) == (["sales"], []))
                #expect(try await channels.delete("sales"))
                _ = try await channels.put(HeraldCore.Channel(url: "sales", kind: .chat, name: "Sales, third"))
                try await world.send("third", to: ["u2"], category: "", channel: "sales")
                #expect(try await changes(&theirs) == (["sales"], []))
                #expect(theirs.channels["sales"]?.name == "Sales, third")

                // An admin reset of a channel the user opened keeps it listed, emptied.
                let reset = try await client.execute(
                    uri: "/v1/users/u1/channels/other/reset",
                    method: .post,
                    headers: jsonHeaders(bearer: Self.adminToken)
                )
                #expect(reset.status == .noContent)
                try await world.send("in other", to: ["u1"], channel: "other")
                #expect(try await changes(&mine) == (["other"], []))
                _ = try await client.execute(uri: "/v1/users/u1/channels/other/reset", method: .post, headers: jsonHeaders(bearer: Self.adminToken))
                #expect(try await changes(&mine) == (["other"], []))
                #expect(mine.channels["other"]?.unread == 0)

                try await expectInStep(&mine, client, "u1 at the end")
                try await expectInStep(&theirs, client, "u2 at the end")
                #expect(mine.restarts == 1 && theirs.restarts == 1)
            }
        }
    }

    @Test func aChangeThatCommitsLateIsNeverSkippedByTheChannelList() async throws {
        try await TestPostgres.withDatabase(maximumConnections: 4, cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            _ = try await ChannelStore(client: db.client).put(HeraldCore.Channel(url: "support", kind: .chat, name: "Support"))
            let early = try await world.send("early", to: ["u1"])
            try await app(db).test(.router) { client in
                var list = ListClient(session: world.sessions["u1"]!)
                try await sync(&list, client)
                #expect(list.channels["feed"]?.unread == 1)
                let userKey = try await db.client.query("SELECT key FROM users WHERE id = 'u1'").first!.decode(Int64.self)
                let channelKey = try await db.client.query("SELECT key FROM channels WHERE url = 'feed'").first!.decode(Int64.self)

                // Transaction A takes its position and reads u1's copy in `feed`, and stays open…
                try await db.client.withConnection { held in
                    try await held.query("BEGIN")
                    try await held.query(
                        """
                        WITH marked AS (
                            UPDATE notification_recipients SET status = 2, change_xid = pg_current_xact_id()::text::bigint
                            WHERE user_key = \(userKey) AND notification_id = \(early) RETURNING 1
                        )
                        UPDATE channel_states SET unread_adjustment = unread_adjustment - (SELECT count(*) FROM marked)
                        WHERE user_key = \(userKey) AND channel_key = \(channelKey)
                        """
                    )
                    // …while transaction B, later, sends in `support` and commits.
                    let late = try await world.send("late", to: ["u1"], category: "", channel: "support")

                    // The change log must not move the client past A's change: B's waits too.
                    let during = try await sync(&list, client)
                    #expect(during["is_live"] as? Bool == true)
                    #expect(Self.entries(during)["support"] == nil)
                    #expect(list.channels["feed"]?.unread == 1)

                    try await held.query("COMMIT")

                    // Once A commits, the token handed out meanwhile brings both.
                    let after = try await sync(&list, client)
                    #expect(Set(Self.entries(after).keys) == ["feed", "support"])
                    #expect(list.channels["feed"]?.unread == 0)
                    #expect(list.channels["support"]?.lastNotification == "\(late)")
                }
                try await expectInStep(&list, client, "after the late commit")
            }
        }
    }

    @Test func channelListTokensThatCannotContinueAreNotLive() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            try await world.send("one", to: ["u1", "u2"])
            try await app(db).test(.router) { client in
                let session = world.sessions["u1"]!
                let token = try #require(try await channelList(client, session)["next_token"] as? String)
                let otherUsersToken = try #require(try await channelList(client, world.sessions["u2"]!)["next_token"] as? String)
                let collectionToken = try #require(try await collection(client, session)["next_token"] as? String)
                var forged = Array(token.utf8)
                forged[10] = forged[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
                let key = try await SettingsStore(client: db.client).syncTokenKey()
                let decoded = try #require(ChannelListToken(decoding: token, key: key))
                #expect(decoded.userKey == (try await db.client.query("SELECT key FROM users WHERE id = 'u1'").first!.decode(Int64.self)))
                let fromTheFuture = ChannelListToken(userKey: decoded.userKey, horizon: decoded.horizon + 1_000_000)

                func isLive(_ token: String) async throws -> Bool {
                    let body = try await channelList(client, session, token: token)
                    if body["is_live"] as? Bool == false {
                        #expect(Self.entries(body).isEmpty && (body["deleted"] as? [String])?.isEmpty == true && body["next_token"] is NSNull)
                    }
                    return body["is_live"] as? Bool ?? false
                }
                #expect(try await isLive(token))
                #expect(try await !isLive("not a token"))
                #expect(try await !isLive(String(decoding: forged, as: UTF8.self)))
                #expect(try await !isLive(otherUsersToken))
                #expect(try await !isLive(collectionToken))
                #expect(try await !isLive(fromTheFuture.encoded(key: key)))
                // Nor does a list token pass for a collection's.
                let asCollection = try await collection(client, session, query: "?token=\(escaped(token))")
                #expect(asCollection["is_live"] as? Bool == false)

                // Older than the retained history: compaction passes it (retention 0, two passes: the
                // first only records where the history stands).
                let store = CollectionStore(client: db.client)
                _ = try await store.compact(retention: .zero)
                _ = try #require(try await store.compact(retention: .zero))
                #expect(try await !isLive(token))
                // A fresh start is live again.
                var list = ListClient(session: session)
                try await expectInStep(&list, client, "after compaction")
                #expect(list.channels["feed"]?.unread == 1)
                #expect(try await isLive(try #require(list.token)))
            }
        }
    }

    @Test func aDeletedChannelLeavesTheListOfAUserOnlyABroadcastReached() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            _ = try await ChannelStore(client: db.client).put(HeraldCore.Channel(url: "town", kind: .chat, name: "Town"))
            let template = try #require(try await TemplateStore(client: db.client).get("plain")).template
            let content = try template.renderNotification(variables: ["title": .string("to all")], userVariables: [:])
            let draft = NotificationDraft(
                channelURL: "town",
                templateKey: "plain",
                templateVersion: 1,
                variables: ["title": .string("to all")],
                content: content,
                category: "",
                tags: [],
                eventDeadline: nil,
                push: PushOptions(),
                audience: .all
            )
            guard case .created = try await world.notifications.send(draft, idempotency: nil, respond: { _ in StoredResponse(status: 202, body: []) })
            else {
                throw CancellationError()
            }
            while try await world.notifications.fanOutNextBatch(size: 100) != nil {}
            // Reached, not folded: u1 has a copy in `town` and no state there.
            let states = try await db.client.query(
                "SELECT count(*) FROM channel_states s JOIN channels c ON c.key = s.channel_key WHERE c.url = 'town'"
            ).first!.decode(Int.self)
            #expect(states == 0)
            try await app(db).test(.router) { client in
                var list = ListClient(session: world.sessions["u1"]!)
                try await sync(&list, client)
                #expect(list.channels["town"]?.unread == 1)
                #expect(try await ChannelStore(client: db.client).delete("town"))
                let body = try await sync(&list, client)
                #expect(body["deleted"] as? [String] == ["town"])
                #expect(list.channels["town"] == nil)
            }
        }
    }

    @Test func compactionRemovesOldRemovalsOfDeletedChannels() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            try await world.send("one", to: ["u1", "u2"], channel: "other")
            #expect(try await ChannelStore(client: db.client).delete("other"))
            let removals = { try await db.client.query("SELECT count(*) FROM channel_list_removals").first!.decode(Int.self) }
            #expect(try await removals() == 2)
            let store = CollectionStore(client: db.client)
            _ = try await store.compact(retention: .zero)
            _ = try #require(try await store.compact(retention: .zero))
            #expect(try await removals() == 0)
        }
    }
}

extension CollectionTests {
    /// The model test of the channel list: random (seeded) histories over two feed and two chat
    /// channels — sends, broadcasts with their fan-out and folding, edits, deletes, reads, seen marks,
    /// openings, renames, a chat channel deleted and made again, resets and compaction — while two
    /// clients of u1 keep their list by the change log. Whenever one syncs, its copy must equal a
    /// fresh load (nothing is held open here, so a sync sees everything committed before it).
    @Test("Random histories keep every channel list in step", arguments: [UInt64(20_261_123)])
    func randomHistoriesKeepEveryChannelListInStep(seed: UInt64) async throws {
        try await TestPostgres.withDatabase(maximumConnections: 4, cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let tests = self
            let world = try await tests.world(db, users: ["u1", "u2", "u3"])
            let channels = ChannelStore(client: db.client)
            let store = CollectionStore(client: db.client)
            let template = try #require(try await TemplateStore(client: db.client).get("plain")).template
            let userKey = try await db.client.query("SELECT key FROM users WHERE id = 'u1'").first!.decode(Int64.self)
            for url in ["support", "sales"] { _ = try await channels.put(HeraldCore.Channel(url: url, kind: .chat, name: url)) }
            let feeds = ["feed", "other"]
            let all = feeds + ["support", "sales"]
            try await tests.app(db).test(.router) { client in
                var random = SplitMix64(seed: seed)
                var lists = [ListClient(session: world.sessions["u1"]!), ListClient(session: world.sessions["u1"]!)]
                var sent: [(id: Int64, channel: String)] = []
                var counter = 0
                var renames = 0
                var channelDeletes = 0
                var removalsSeen = 0

                for step in 0..<700 {
                    let channel = all.randomElement(using: &random)!
                    let category = feeds.contains(channel) ? (Bool.random(using: &random) ? "news" : "alerts") : ""
                    switch Int.random(in: 0..<100, using: &random) {
                    case 0..<18:
                        counter += 1
                        var users = ["u1", "u2", "u3"].filter { _ in Bool.random(using: &random) }
                        if users.isEmpty || Int.random(in: 0..<3, using: &random) > 0 { users.append("u1") }
                        sent.append(
                            (try await world.send("n\(counter)", to: Array(Set(users)).sorted(), category: category, channel: channel), channel)
                        )
                    case 18..<21:
                        counter += 1
                        let content = try template.renderNotification(variables: ["title": .string("b\(counter)")], userVariables: [:])
                        let draft = NotificationDraft(
                            channelURL: channel,
                            templateKey: "plain",
                            templateVersion: 1,
                            variables: ["title": .string("b\(counter)")],
                            content: content,
                            category: category,
                            tags: [],
                            eventDeadline: nil,
                            push: PushOptions(),
                            audience: .all
                        )
                        if case .created(let stored, _, _) = try await world.notifications.send(
                            draft,
                            idempotency: nil,
                            respond: { _ in StoredResponse(status: 202, body: []) }
                        ) {
                            sent.append((stored.id, channel))
                        }
                    case 21..<25:
                        _ = try await world.notifications.fanOutNextBatch(size: 1)
                    case 25..<27:
                        _ = try await world.notifications.foldNextBatch(size: 1)
                    case 27..<31 where !sent.isEmpty:
                        let id = sent.randomElement(using: &random)!.id
                        let content = try template.renderNotification(variables: ["title": .string("edited \(step)")], userVariables: [:])
                        do {
                            _ = try await world.notifications.update(id, variables: ["title": .string("edited \(step)")], content: content)
                        } catch NotificationStoreError.fanoutInProgress {
                            // Not yet; the history goes on.
                        }
                    case 31..<36 where !sent.isEmpty:
                        _ = try await world.notifications.delete(sent.remove(at: Int.random(in: 0..<sent.count, using: &random)).id)
                    case 36..<44:
                        let ids = sent.filter { $0.channel == channel }.map(\.id).shuffled(using: &random).prefix(
                            Int.random(in: 0...2, using: &random)
                        )
                        let body = ids.isEmpty ? "" : #"{"notification_ids":[\#(ids.map { "\"\($0)\"" }.joined(separator: ","))]}"#
                        let response = try await client.execute(
                            uri: "/v1/me/channels/\(channel)/read",
                            method: .post,
                            headers: jsonHeaders(bearer: world.sessions["u1"]!),
                            body: ByteBuffer(string: body)
                        )
                        #expect(response.status == .ok)
                    case 44..<47:
                        let response = try await client.execute(
                            uri: "/v1/me/channels/\(channel)/seen",
                            method: .post,
                            headers: jsonHeaders(bearer: world.sessions["u1"]!)
                        )
                        #expect(response.status == .ok)
                    case 47..<51:
                        _ = try await tests.collection(client, world.sessions["u1"]!, channel: channel, query: "?limit=1")
                    case 51..<54:
                        renames += 1
                        let current = try #require(try await channels.get(channel)).channel
                        var renamed = current
                        renamed.name = "\(channel) \(renames)"
                        _ = try await channels.put(renamed)
                    case 54..<56:
                        // The chat channel `sales` deleted (with everything in it) and made again.
                        channelDeletes += 1
                        #expect(try await channels.delete("sales"))
                        sent.removeAll { $0.channel == "sales" }
                        _ = try await channels.put(HeraldCore.Channel(url: "sales", kind: .chat, name: "sales again \(channelDeletes)"))
                    case 56..<58:
                        let channelKey = try await db.client.query("SELECT key FROM channels WHERE url = \(channel)").first!.decode(Int64.self)
                        try await store.reset(userKey: userKey, channelKey: channelKey)
                    case 58..<61:
                        _ = try await store.compact(retention: .zero)
                    case 61..<100:
                        let index = Int.random(in: 0..<2, using: &random)
                        let body = try await tests.sync(&lists[index], client)
                        removalsSeen += (body["deleted"] as? [String])?.count ?? 0
                        if lists[index].token == nil { try await tests.sync(&lists[index], client) }
                        let truth = Self.entries(try await tests.channelList(client, world.sessions["u1"]!))
                        #expect(lists[index].channels == truth, "seed \(seed) step \(step): list \(index) differs from a fresh load")
                    default:
                        break
                    }
                }
                for index in 0..<2 { try await tests.expectInStep(&lists[index], client, "seed \(seed) at the end, list \(index)") }
                // The run exercised what it should: removals, restarts after compaction, renames,
                // deleted channels, broadcasts.
                #expect(removalsSeen > 3)
                #expect(lists.map(\.restarts).reduce(0, +) > 4)
                #expect(renames > 5 && channelDeletes > 2)
                let broadcasts = try await db.client.query("SELECT count(*) FROM notifications WHERE audience = 'all'").first!.decode(Int.self)
                #expect(broadcasts > 5)
            }
        }
    }
}
