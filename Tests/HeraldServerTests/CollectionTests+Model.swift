import Foundation
import HeraldCore
import HeraldServer
import HeraldServices
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Testing

/// A model-based test of the sync protocol: random (seeded, reproducible) sequences of sends (some
/// batched, folding into digests that change in place), updates, deletes, reads, archives,
/// unarchives, marks unread, user deletes and actions pressed from two devices, syncs with
/// random limits, compaction and resets. Four devices keep collections of four statuses (two the
/// default, one `archived`, one `unread`) and apply every response the way a client would; whenever a
/// device has drained its changes, its copy must equal a fresh load of its filter, and the server's
/// unread counter must equal the true number of unread copies.
///
/// Part of the `Collections` suite (an extension of it) so that it runs serialized with the other
/// tests on the horizon-sensitive cluster: an open transaction anywhere in the cluster holds back
/// what a sync may return, and "drained" must mean "everything committed so far".
extension CollectionTests {
    /// What a client keeps per notification.
    struct Copy: Equatable, CustomStringConvertible {
        var status: String
        var title: String
        var category: String
        var archived: Bool
        var actionsDone: [String]
        var description: String { "\(status)/\(title)/\(category)\(archived ? "/archived" : "")\(actionsDone)" }
    }

    /// One device's collection of one channel.
    struct Device {
        var session: String
        /// The collection's `status` query parameter (empty: the default).
        var status = ""
        var token: String?
        var copy: [String: Copy] = [:]
        var resets = 0
    }

    static func copy(_ item: [String: Any]) -> (String, Copy) {
        let id = item["id"] as! String
        let title = (item["data"] as? [String: Any])?["title"] as? String ?? "?"
        return (
            id,
            Copy(
                status: item["status"] as! String,
                title: title,
                category: item["category"] as! String,
                archived: item["archived"] as! Bool,
                actionsDone: item["actions_done"] as! [String]
            )
        )
    }

    /// Every user's unread count in every channel (counter plus broadcasts counted per request), as
    /// the badge and the channel list read it (`herald_user_channels`; a channel missing there counts
    /// 0), equals the number of their unread live copies there.
    static func expectUnreadCountsMatchCopies(_ db: TestDatabase) async throws {
        let counters = try await db.client.query(
            """
            SELECT u.id, c.url,
                coalesce((SELECT h.unread FROM herald_user_channels(u.key) AS h WHERE h.channel_key = c.key), 0),
                (SELECT count(*) FROM notification_recipients r
                    WHERE r.user_key = u.key AND r.channel_key = c.key AND r.status < 2 AND NOT r.deleted)
            FROM users u CROSS JOIN channels c
            """
        )
        for row in counters {
            let (user, channel, counted, truth) = try row.decode((String, String, Int64, Int64).self)
            #expect(counted == truth, "\(user) in \(channel)")
        }
    }

    /// With `memory`, quiet polls may be answered from memory (`ChangeNotifier`); each sync first
    /// waits until this process has heard everything committed so far, as a poll after a push or a
    /// stream event does, so that "drained" still means "everything committed".
    @Test("Random histories keep every device in step", arguments: [(UInt64(20_261_122), false), (7, false), (20_261_126, true), (41, true)])
    func randomHistoriesKeepEveryDeviceInStep(seed: UInt64, memory: Bool) async throws {
        try await TestPostgres.withDatabase(maximumConnections: 4, cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let tests = self
            let world = try await tests.world(db, users: ["u1", "u2", "u3"])
            if memory {
                try await tests.withMemory(db, hugeGap: 40) { client, notifier in
                    try await tests.randomHistory(db, world, seed: seed, client: client, notifier: notifier)
                    #expect(notifier.tallies.pollHits > 30, "memory answered quiet polls")
                }
            } else {
                try await tests.app(db, hugeGap: 40).test(.router) { client in
                    try await tests.randomHistory(db, world, seed: seed, client: client, notifier: nil)
                }
            }
        }
    }

    func randomHistory(_ db: TestDatabase, _ world: World, seed: UInt64, client: some TestClientProtocol, notifier: ChangeNotifier?) async throws {
        let tests = self
        let store = CollectionStore(client: db.client)
        let template = try #require(try await TemplateStore(client: db.client).get("plain")).template
        let userKey = try await db.client.query("SELECT key FROM users WHERE id = 'u1'").first!.decode(Int64.self)
        let channelKey = try await db.client.query("SELECT key FROM channels WHERE url = 'feed'").first!.decode(Int64.self)
        do {
            do {
                var random = SplitMix64(seed: seed)
                // Four devices of u1, two of them showing other statuses; u2 and u3 only receive (their
                // counters are checked too).
                let session = world.sessions["u1"]!
                var devices = [
                    Device(session: session), Device(session: session), Device(session: session, status: "archived"),
                    Device(session: session, status: "unread"),
                ]
                // Broadcasts folding reached, and those it finished (compaction may remove deleted ones).
                var foldedInto = Set<Int64>()
                var foldedFully = Set<Int64>()
                var broadcasts = 0
                var sent: [Int64] = []
                var counter = 0
                var stateChanges = 0
                var digestSends = 0

                /// Everything the server holds for u1 now in a collection of `status`, by paging a fresh
                /// load to the end.
                func freshLoad(_ status: String = "") async throws -> (copy: [String: Copy], unread: Int) {
                    let filter = status.isEmpty ? "" : "&status=\(status)"
                    var page = try await tests.collection(client, world.sessions["u1"]!, query: "?limit=100\(filter)")
                    var copy: [String: Copy] = [:]
                    let unread = ((page["channel"] as? [String: Any])?["state"] as? [String: Any])?["unread_count"] as? Int ?? -1
                    while true {
                        for item in page["notifications"] as? [[String: Any]] ?? [] {
                            let (id, value) = Self.copy(item)
                            #expect(copy[id] == nil, "a page repeated \(id)")
                            copy[id] = value
                        }
                        guard let cursor = page["prev_cursor"] as? String else { break }
                        page = try jsonObject(
                            try await client.execute(
                                uri: "/v1/me/channels/feed/notifications?limit=100&before=\(cursor)\(filter)",
                                method: .get,
                                headers: jsonHeaders(bearer: world.sessions["u1"]!)
                            )
                        )
                    }
                    return (copy, unread)
                }

                /// One sync call for a device, applied as a client would. Returns whether more is pending.
                func sync(_ index: Int, limit: Int) async throws -> Bool {
                    let filter = devices[index].status.isEmpty ? "" : "&status=\(devices[index].status)"
                    guard let token = devices[index].token else {
                        let fresh = try await tests.collection(client, devices[index].session, query: "?limit=1\(filter)")
                        // Start over: take the token first, then the whole history by paging.
                        devices[index].token = fresh["next_token"] as? String
                        devices[index].copy = try await freshLoad(devices[index].status).copy
                        devices[index].resets += 1
                        return true
                    }
                    await notifier?.catchUp()
                    let body = try await tests.collection(
                        client,
                        devices[index].session,
                        query: "?limit=\(limit)&token=\(tests.escaped(token))\(filter)"
                    )
                    guard body["is_live"] as? Bool == true else {
                        devices[index].token = nil
                        return true
                    }
                    for item in body["notifications"] as? [[String: Any]] ?? [] {
                        let (id, value) = Self.copy(item)
                        devices[index].copy[id] = value
                    }
                    for id in body["deleted"] as? [String] ?? [] { devices[index].copy[id] = nil }
                    devices[index].token = body["next_token"] as? String
                    return body["has_more"] as? Bool == true
                }

                func drainAndCompare(_ index: Int, step: Int) async throws {
                    // A transaction open anywhere in the cluster at a poll's moment (a listener's ping, a
                    // database being dropped) holds that poll's horizon back: what committed after it
                    // began comes with a later poll. So the device must come to equal a fresh load
                    // within a deadline, not at its first drained answer; one that stays apart fails.
                    let deadline = ContinuousClock.now + .seconds(10)
                    var truth: (copy: [String: Copy], unread: Int)
                    repeat {
                        var calls = 0
                        while try await sync(index, limit: 25) {
                            calls += 1
                            if calls > 200 {
                                Issue.record("device \(index) never drained (step \(step))")
                                return
                            }
                        }
                        truth = try await freshLoad(devices[index].status)
                    } while devices[index].copy != truth.copy && ContinuousClock.now < deadline
                    #expect(devices[index].copy == truth.copy, "seed \(seed) step \(step): device \(index) differs from a fresh load")
                    // Archived notifications are read: every unread one is in the default collection.
                    let everything = try await freshLoad("all").copy
                    #expect(
                        !everything.values.contains { $0.archived && $0.status != "READ" },
                        "seed \(seed) step \(step): an archived one is unread"
                    )
                    let trueUnread = everything.values.filter { $0.status != "READ" }.count
                    #expect(truth.unread == trueUnread, "seed \(seed) step \(step): unread counter \(truth.unread), true count \(trueUnread)")
                }

                for step in 0..<1_100 {
                    let roll = Int.random(in: 0..<100, using: &random)
                    switch roll {
                    case 0..<22:
                        counter += 1
                        var users = ["u1", "u2", "u3"].filter { _ in Bool.random(using: &random) }
                        if users.isEmpty || Int.random(in: 0..<4, using: &random) > 0 { users.append("u1") }
                        let category = Bool.random(using: &random) ? "news" : "alerts"
                        sent.append(try await world.send("n\(counter)", to: Array(Set(users)).sorted(), category: category))
                    case 22..<26 where Int.random(in: 0..<3, using: &random) == 0:
                        // A batched send (listed or to everyone): it folds into the user's open digest,
                        // which changes in place (its title the latest send's), else opens one.
                        counter += 1
                        let audience: Audience = Bool.random(using: &random) ? .all : .targets(["u1", "u2"])
                        let title = "d\(counter)"
                        let draft = NotificationDraft(
                            channelURL: "feed",
                            templateKey: "plain",
                            templateVersion: 1,
                            variables: ["title": .string(title)],
                            content: try template.renderNotification(variables: ["title": .string(title)], userVariables: [:]),
                            category: "news",
                            tags: [],
                            eventDeadline: nil,
                            push: PushOptions(),
                            audience: audience,
                            batch: Batch(key: "digest", window: "1h")
                        )
                        if case .created(let stored, _, _) = try await world.notifications.send(
                            draft,
                            idempotency: nil,
                            respond: { _ in StoredResponse(status: 202, body: []) }
                        ) {
                            sent.append(stored.id)
                            digestSends += 1
                            if case .all = audience { broadcasts += 1 }
                        }
                    case 22..<26:
                        // A broadcast to every user, sometimes with u1's own variables (copy made at send).
                        counter += 1
                        let own: [String: [String: JSONValue]] = Bool.random(using: &random) ? ["u1": ["title": .string("mine \(counter)")]] : [:]
                        let content = try template.renderNotification(variables: ["title": .string("b\(counter)")], userVariables: own)
                        let draft = NotificationDraft(
                            channelURL: "feed",
                            templateKey: "plain",
                            templateVersion: 1,
                            variables: ["title": .string("b\(counter)")],
                            content: content,
                            category: Bool.random(using: &random) ? "news" : "alerts",
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
                            sent.append(stored.id)
                            broadcasts += 1
                        }
                    case 26..<29:
                        // Fan-out work, one user per batch, interleaved with everything else.
                        _ = try await world.notifications.fanOutNextBatch(size: 1)
                    case 29..<31:
                        // Folding finished broadcasts into the counters, one user per batch.
                        if let progress = try await world.notifications.foldNextBatch(size: 1) {
                            foldedInto.insert(progress.notificationID)
                            if progress.finished { foldedFully.insert(progress.notificationID) }
                        }
                    case 31..<34 where !sent.isEmpty:
                        let id = sent.randomElement(using: &random)!
                        let title = "edited \(step)"
                        let content = try template.renderNotification(variables: ["title": .string(title)], userVariables: [:])
                        do {
                            _ = try await world.notifications.update(id, variables: ["title": .string(title)], content: content)
                        } catch NotificationStoreError.fanoutInProgress {
                            // A broadcast still fanning out cannot change yet; the history goes on.
                        }
                    case 34..<39 where !sent.isEmpty:
                        let id = sent.remove(at: Int.random(in: 0..<sent.count, using: &random))
                        _ = try await world.notifications.delete(id)
                    case 46..<50:
                        // The user's own states, from any device, of what it holds.
                        let device = Int.random(in: 0..<devices.count, using: &random)
                        let known = Array(devices[device].copy.keys).sorted()
                        let picked =
                            known.isEmpty ? ["1"] : (0..<Int.random(in: 1...3, using: &random)).map { _ in known.randomElement(using: &random)! }
                        let ids = #"{"notification_ids":[\#(picked.map { "\"\($0)\"" }.joined(separator: ","))]}"#
                        let feed = "/v1/me/channels/feed/"
                        let (uri, body): (String, String)
                        switch Int.random(in: 0..<23, using: &random) {
                        case 0..<7: (uri, body) = (feed + "archive", ids)
                        case 7..<11: (uri, body) = (feed + "unarchive", ids)
                        case 11..<16: (uri, body) = (feed + "unread", ids)
                        case 16..<19: (uri, body) = (feed + "delete", ids)
                        case 19..<20: (uri, body) = (feed + "archive", Bool.random(using: &random) ? #"{"scope":"read"}"# : #"{"scope":"all"}"#)
                        default:
                            // A button pressed: the path names the notification and the action.
                            let action = Bool.random(using: &random) ? "ack" : "open"
                            (uri, body) = ("/v1/me/notifications/\(picked[0])/actions/\(action)", "")
                        }
                        let response = try await client.execute(
                            uri: uri,
                            method: .post,
                            headers: jsonHeaders(bearer: devices[device].session),
                            body: ByteBuffer(string: body)
                        )
                        // A press names one notification, which may be gone (deleted since the device synced).
                        let pressGone = uri.contains("/actions/") && response.status == .notFound
                        #expect(response.status == .ok || pressGone, "\(uri) \(body): \(String(buffer: response.body))")
                        stateChanges += 1
                    case 39..<46:
                        let device = Int.random(in: 0..<2, using: &random)
                        let known = Array(devices[device].copy.keys).sorted()
                        let body: String
                        if known.isEmpty || Int.random(in: 0..<5, using: &random) == 0 {
                            body = ""
                        } else {
                            let picked = (0..<Int.random(in: 1...3, using: &random)).map { _ in known.randomElement(using: &random)! }
                            body = #"{"notification_ids":[\#(picked.map { "\"\($0)\"" }.joined(separator: ","))]}"#
                        }
                        let response = try await client.execute(
                            uri: "/v1/me/channels/feed/read",
                            method: .post,
                            headers: jsonHeaders(bearer: devices[device].session),
                            body: ByteBuffer(string: body)
                        )
                        #expect(response.status == .ok)
                    case 50..<90:
                        let device = Int.random(in: 0..<devices.count, using: &random)
                        _ = try await sync(device, limit: Int.random(in: 1...10, using: &random))
                    case 90..<93:
                        _ = try await store.compact(retention: .zero)
                    case 93..<94:
                        try await store.reset(userKey: userKey, channelKey: channelKey)
                    case 94..<100:
                        try await drainAndCompare(Int.random(in: 0..<devices.count, using: &random), step: step)
                    default:
                        break
                    }
                }
                for device in devices.indices { try await drainAndCompare(device, step: -1) }
                #expect(stateChanges > 20)
                // Digests changed in place: some copy took more than one send.
                let folds = try await db.client.query("SELECT count(*) FROM notification_recipients WHERE batch_count > 1")[0].decode(Int64.self)
                #expect(digestSends > 5 && folds > 0, "\(digestSends) batched sends, \(folds) digests folded into")
                // The other users' counters are true as well.
                try await Self.expectUnreadCountsMatchCopies(db)
                // The run exercised what it should: devices had to start over at least once.
                #expect(devices.map(\.resets).reduce(0, +) > 2)
                #expect(broadcasts > 10)
                // Folding ran, some of it part way when the history moved on.
                #expect(foldedInto.count > 3 && !foldedFully.isEmpty)
            }
        }
    }
}
