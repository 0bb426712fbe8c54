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
import Postgres
import Prometheus
import Testing

@testable import HeraldServices

/// Quiet polls answered from memory, through HTTP with a real listener (`ChangeNotifier`): the answer
/// the database would give, with the token the client sent; never a change skipped, a write unseen by
/// the process that made it, a revoked session let in, or an answer given while the listener is down.
extension CollectionTests {
    /// The application with live streams and the change notifier, on a loopback port, for `body`.
    func withMemory(
        _ db: TestDatabase,
        hugeGap: Int = 300,
        _ body: @escaping @Sendable (_ client: any TestClientProtocol, _ notifier: ChangeNotifier) async throws -> Void
    ) async throws {
        try await withMemoryApplication(
            client: db.client,
            listenerConninfo: db.directConninfo,
            listenerName: Self.listenerName,
            adminToken: Self.adminToken,
            sync: SyncSettings(hugeGap: hugeGap),
            body
        )
    }

    static let listenerName = "herald-live-memory-test"

    /// Starts a long poll of `path` (with `wait=30` and the token escaped) in a task of its own.
    func longPoll(_ client: any TestClientProtocol, _ session: String, _ path: String, token: String) -> Task<TestResponse, any Error> {
        let uri = "\(path)?wait=30&token=\(escaped(token))"
        return Task { try await client.execute(uri: uri, method: .get, headers: jsonHeaders(bearer: session)) }
    }

    /// A first load, then a first poll, which the database answers (a first load is not kept for
    /// memory): the answer memory keeps, and its token.
    func settled(_ client: some TestClientProtocol, _ session: String, device: String? = nil) async throws -> (answer: [String: Any], token: String) {
        let loaded = try #require(try await collection(client, session)["next_token"] as? String)
        let answer = try jsonObject(try await poll(client, session, token: loaded, device: device))
        return (answer, try #require(answer["next_token"] as? String))
    }

    func poll(_ client: some TestClientProtocol, _ session: String, token: String, device: String? = nil) async throws -> TestResponse {
        var headers = jsonHeaders(bearer: session)
        if let device { headers[HTTPField.Name("Herald-Device")!] = device }
        return try await client.execute(uri: "/v1/me/channels/feed/collection?token=\(escaped(token))", method: .get, headers: headers)
    }

    @Test func aQuietPollIsAnsweredFromMemoryWithItsOwnToken() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            let first = try await world.send("one", to: ["u1"])
            try await withMemory(db) { client, notifier in
                let session = world.sessions["u1"]!
                let (load, token) = try await settled(client, session)
                let before = notifier.tallies

                let quiet = try jsonObject(try await poll(client, session, token: token))
                #expect(notifier.tallies.pollHits == before.pollHits + 1)
                #expect(notifier.tallies.sessionHits > before.sessionHits)
                #expect(quiet["is_live"] as? Bool == true)
                #expect(quiet["next_token"] as? String == token, "an answer from memory never moves the token")
                #expect(ids(quiet).isEmpty && ids(quiet, "deleted").isEmpty && quiet["has_more"] as? Bool == false)
                // What a fresh read shows.
                #expect(quiet["badge"] as? Int == 1)
                let state = (quiet["channel"] as? [String: Any])?["state"] as? [String: Any]
                #expect(state?["unread_count"] as? Int == 1)
                #expect((quiet["channel"] as? [String: Any])?["channel_url"] as? String == "feed")
                #expect(quiet["horizon"] as? String == load["horizon"] as? String, "the answer's own snapshot")

                // A change heard: the database answers, with the change, and memory takes over again.
                let second = try await world.send("two", to: ["u1"])
                await notifier.catchUp()
                let changed = try jsonObject(try await poll(client, session, token: token))
                #expect(ids(changed) == ["\(second)"])
                let next = try #require(changed["next_token"] as? String)
                #expect(next != token)
                let hits = notifier.tallies.pollHits
                let again = try jsonObject(try await poll(client, session, token: next))
                #expect(notifier.tallies.pollHits == hits + 1)
                #expect(ids(again).isEmpty && again["next_token"] as? String == next && again["badge"] as? Int == 2)

                // The user's own write through this process is seen by the next poll, at once.
                let read = try await client.execute(
                    uri: "/v1/me/channels/feed/read",
                    method: .post,
                    headers: jsonHeaders(bearer: session),
                    body: ByteBuffer(string: #"{"notification_ids":["\#(first)"]}"#)
                )
                #expect(read.status == .ok)
                let afterRead = try jsonObject(try await poll(client, session, token: next))
                #expect(ids(afterRead) == ["\(first)"])
                #expect(afterRead["badge"] as? Int == 1)
            }
        }
    }

    @Test func aLongPollWaitsForAChangeOfItsOwn() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            try await world.send("one", to: ["u1"])
            try await withMemory(db) { client, notifier in
                let session = world.sessions["u1"]!
                let token = try await settled(client, session).token
                let waiting = longPoll(client, session, "/v1/me/channels/feed/collection", token: token)
                try await waitUntil("the long poll to wait") { notifier.waiting == 1 }
                // Another user's notification does not end it.
                try await world.send("for u2", to: ["u2"])
                await notifier.catchUp()
                #expect(notifier.waiting == 1)
                let mine = try await world.send("for u1", to: ["u1"])
                let answer = try jsonObject(try await waiting.value)
                #expect(ids(answer) == ["\(mine)"])
                #expect(answer["next_token"] as? String != token)

                // The channel list waits the same way.
                let list = try jsonObject(try await client.execute(uri: "/v1/me/channels", method: .get, headers: jsonHeaders(bearer: session)))
                let listToken = try #require(list["next_token"] as? String)
                let listWaiting = longPoll(client, session, "/v1/me/channels", token: listToken)
                try await waitUntil("the list to wait") { notifier.waiting == 1 }
                try await world.send("in other", to: ["u1"], channel: "other")
                let changed = try jsonObject(try await listWaiting.value)
                let feed = changed["feed"] as? [[String: Any]] ?? []
                #expect(feed.contains { $0["channel_url"] as? String == "other" }, "\(changed)")

                // A quiet long poll whose time runs out answers as the poll would have (the send to
                // `other` moved the badge since `next`: the database answers, quiet, its token moved up).
                let next = try #require(answer["next_token"] as? String)
                let quiet = try await client.execute(
                    uri: "/v1/me/channels/feed/collection?wait=1&token=\(escaped(next))",
                    method: .get,
                    headers: jsonHeaders(bearer: session)
                )
                let quietBody = try jsonObject(quiet)
                #expect(ids(quietBody).isEmpty && quietBody["is_live"] as? Bool == true && quietBody["badge"] as? Int == 3)
                let invalid = try await client.execute(
                    uri: "/v1/me/channels/feed/collection?wait=51&token=\(escaped(next))",
                    method: .get,
                    headers: jsonHeaders(bearer: session)
                )
                #expect(invalid.status == .badRequest)
                #expect(try errorCode(invalid) == "invalid_wait")
            }
        }
    }

    @Test func aLongPollWhoseSessionIsRevokedMeanwhileGetsNothingNew() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            let sent = try await world.send("one", to: ["u1"])
            try await withMemory(db) { client, notifier in
                let session = world.sessions["u1"]!
                let token = try await settled(client, session).token
                let waiting = longPoll(client, session, "/v1/me/channels/feed/collection", token: token)
                try await waitUntil("the long poll to wait") { notifier.waiting == 1 }
                // The revocation and a change of the user's commit together: the wait ends, and what
                // changed must not reach a client that is no longer signed in.
                let key = try #require(try await UserStore(client: db.client).key("u1"))
                try await db.client.transaction([
                    "DELETE FROM sessions WHERE user_id = 'u1'",
                    "UPDATE notification_recipients SET status = 2, change_xid = pg_current_xact_id()::text::bigint WHERE user_key = \(key)",
                    LiveHint.sessionsRevoked(userKey: key).query,
                ])
                let answer = try await waiting.value
                #expect(answer.status == .ok)
                #expect(ids(try jsonObject(answer)).isEmpty, "\(sent) read after the revocation")
                #expect(try await poll(client, session, token: token).status == .unauthorized)
            }
        }
    }

    @Test func aRevokedSessionOrARemovedDeviceIsRefusedAtOnce() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            try await world.send("one", to: ["u1"])
            try await withMemory(db) { client, notifier in
                let session = world.sessions["u1"]!
                let device = String(repeating: "ab", count: 32)
                let registered = try await client.execute(
                    uri: "/v1/me/devices/\(device)",
                    method: .put,
                    headers: jsonHeaders(bearer: session),
                    body: ByteBuffer(string: #"{"environment":"sandbox","topic":"com.example.app"}"#)
                )
                #expect(registered.status == .ok || registered.status == .created, "\(String(buffer: registered.body))")
                let token = try await settled(client, session, device: device).token
                let hits = notifier.tallies.pollHits
                #expect(try await poll(client, session, token: token, device: device).status == .ok)
                #expect(notifier.tallies.pollHits == hits + 1, "the device known synced: from memory")

                let removed = try await client.execute(uri: "/v1/me/devices/\(device)", method: .delete, headers: jsonHeaders(bearer: session))
                #expect(removed.status == .noContent)
                let gone = try await poll(client, session, token: token, device: device)
                #expect(gone.status == .notFound)
                #expect(try errorCode(gone) == "device_not_found")

                let revoked = try await client.execute(uri: "/v1/users/u1/sessions", method: .delete, headers: jsonHeaders(bearer: Self.adminToken))
                #expect(revoked.status == .ok)
                #expect(try await poll(client, session, token: token).status == .unauthorized)
            }
        }
    }

    @Test func nothingComesFromMemoryWhileTheListenerIsDownAndNoChangeMadeMeanwhileIsLost() async throws {
        try await TestPostgres.withDatabase(cluster: .horizonSensitive) { (db: TestDatabase) async throws in
            let world = try await world(db)
            try await world.send("one", to: ["u1"])
            try await withMemory(db) { client, notifier in
                let session = world.sessions["u1"]!
                let token = try await settled(client, session).token
                _ = try await poll(client, session, token: token)
                #expect(notifier.tallies.pollHits == 1)
                // The listener cannot come back until the change below has committed unheard.
                let unheard = try await db.refusingNewConnections {
                    try await db.client.query(
                        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = \(Self.listenerName)"
                    )
                    try await waitUntil("memory to stop answering") { !notifier.isAnswering }
                    let unheard = try await world.send("while down", to: ["u1"])
                    let down = try await poll(client, session, token: token)
                    #expect(ids(try jsonObject(down)) == ["\(unheard)"])
                    #expect(notifier.tallies.pollHits == 1, "answered by the database")
                    return unheard
                }
                try await waitUntil("memory to answer again") { notifier.isAnswering }
                // Back: what was kept before is gone, the database answers, then memory again.
                let back = try jsonObject(try await poll(client, session, token: token))
                #expect(ids(back) == ["\(unheard)"])
                let next = try #require(back["next_token"] as? String)
                _ = try await poll(client, session, token: next)
                #expect(notifier.tallies.pollHits == 2)
            }
        }
    }
}
