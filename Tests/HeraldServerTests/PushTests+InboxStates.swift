import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Testing

@testable import HeraldServer

/// Inbox states on two devices: each change (archive, unarchive, mark unread, delete) reaches both
/// devices' streams with the new unread count and badge, and each device's incremental sync of every
/// status moves the notification in or out by position. Part of the push suite for its live server.
extension PushTests {
    /// One device's view of the feed in a collection of one status, kept by incremental sync.
    final class StatusView: @unchecked Sendable {
        let status: String
        var token: String
        var held: [String: [String: Any]] = [:]

        init(status: String, token: String, held: [[String: Any]]) {
            self.status = status
            self.token = token
            for item in held { self.held[item["id"] as! String] = item }
        }
    }

    @Test func inboxStatesReachEveryDeviceByStreamAndSync() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1"])
            defer { Task { await world.shutdown() } }
            try await withLiveServer(world) { port, _, client in
                let session = world.sessions["u1"]!
                let headers = jsonHeaders(bearer: session)
                let first = String(try await world.send("one", to: ["u1"]))
                let second = String(try await world.send("two", to: ["u1"]))
                let streams = [
                    try await TestStream.open(port: port, session: session), try await TestStream.open(port: port, session: session),
                ]

                func load(_ status: String) async throws -> StatusView {
                    let body = try jsonObject(
                        try await client.execute(uri: "/v1/me/channels/feed/collection?status=\(status)", method: .get, headers: headers)
                    )
                    return StatusView(status: status, token: body["next_token"] as! String, held: body["notifications"] as? [[String: Any]] ?? [])
                }
                /// Syncs the view until it equals a fresh load of its status.
                func converge(_ view: StatusView, _ what: String) async throws {
                    try await waitUntil("\(view.status) to show \(what)") {
                        let token = view.token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? view.token
                        let body = try jsonObject(
                            try await client.execute(
                                uri: "/v1/me/channels/feed/collection?status=\(view.status)&token=\(token)",
                                method: .get,
                                headers: headers
                            )
                        )
                        #expect(body["is_live"] as? Bool == true)
                        for item in body["notifications"] as? [[String: Any]] ?? [] { view.held[item["id"] as! String] = item }
                        for id in body["deleted"] as? [String] ?? [] { view.held[id] = nil }
                        view.token = body["next_token"] as! String
                        let fresh = try await load(view.status)
                        return Set(view.held.keys) == Set(fresh.held.keys)
                            && view.held.allSatisfy { id, item in
                                item["status"] as? String == fresh.held[id]?["status"] as? String
                                    && item["archived"] as? Bool == fresh.held[id]?["archived"] as? Bool
                            }
                    }
                }
                func change(_ route: String, _ body: String) async throws -> [String: Any] {
                    let response = try await client.execute(
                        uri: "/v1/me/channels/feed/\(route)",
                        method: .post,
                        headers: headers,
                        body: ByteBuffer(string: body)
                    )
                    #expect(response.status == .ok, "\(route): \(String(buffer: response.body))")
                    return try jsonObject(response)
                }
                /// Both streams hear the change as the channel's new state, then the badge.
                func streamsHear(unread: Int) async throws {
                    for stream in streams {
                        #expect(try await stream.next(type: "channel.read")["unread_count"] as? Int == unread)
                        #expect(try await stream.next(type: "badge")["badge"] as? Int == unread)
                    }
                }
                let views = [try await load("inbox"), try await load("archived"), try await load("unread"), try await load("all")]
                let (inbox, archived, unread, all) = (views[0], views[1], views[2], views[3])
                #expect(Set(inbox.held.keys) == [first, second] && archived.held.isEmpty && Set(unread.held.keys) == [first, second])

                // Archive: read and out of the inbox, into the archive.
                #expect(try await change("archive", #"{"notification_ids":["\#(first)"]}"#)["unread_count"] as? Int == 1)
                try await streamsHear(unread: 1)
                for view in views { try await converge(view, "the archived one") }
                #expect(Set(inbox.held.keys) == [second] && Set(archived.held.keys) == [first] && Set(unread.held.keys) == [second])
                #expect(archived.held[first]?["archived"] as? Bool == true && archived.held[first]?["status"] as? String == "READ")

                // Mark unread: back in the inbox, unread, out of the archive.
                #expect(try await change("unread", #"{"notification_ids":["\#(first)"]}"#)["unread_count"] as? Int == 2)
                try await streamsHear(unread: 2)
                for view in views { try await converge(view, "the unread one") }
                #expect(Set(inbox.held.keys) == [first, second] && archived.held.isEmpty && Set(unread.held.keys) == [first, second])
                #expect(inbox.held[first]?["status"] as? String == "DELIVERED" && inbox.held[first]?["archived"] as? Bool == false)

                // Delete for this user: gone everywhere, and no longer unread.
                #expect(try await change("delete", #"{"notification_ids":["\#(second)"]}"#)["unread_count"] as? Int == 1)
                try await streamsHear(unread: 1)
                for view in views { try await converge(view, "the deletion") }
                #expect(Set(all.held.keys) == [first] && Set(inbox.held.keys) == [first])

                // Archive every read one (none), then everything; unarchive brings it back, read.
                _ = try await change("archive", #"{"scope":"read"}"#)
                #expect(try await change("archive", #"{"scope":"all"}"#)["unread_count"] as? Int == 0)
                try await streamsHear(unread: 0)
                for view in views { try await converge(view, "everything archived") }
                #expect(inbox.held.isEmpty && Set(archived.held.keys) == [first] && unread.held.isEmpty)
                #expect(try await change("unarchive", #"{"notification_ids":["\#(first)"]}"#)["unread_count"] as? Int == 0)
                try await streamsHear(unread: 0)
                for view in views { try await converge(view, "the unarchived one") }
                #expect(Set(inbox.held.keys) == [first] && archived.held.isEmpty && inbox.held[first]?["status"] as? String == "READ")

                // A change of nothing (already unarchived) changes no position and wakes no stream.
                let before = try #require(inbox.held[first]?["position"] as? String)
                _ = try await change("unarchive", #"{"notification_ids":["\#(first)"]}"#)
                try await converge(inbox, "nothing new")
                #expect(inbox.held[first]?["position"] as? String == before)
                for stream in streams { await stream.close() }
            }
        }
    }

    @Test func actionsArePressedOnceAndReachEveryDevice() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2"])
            defer { Task { await world.shutdown() } }
            try await withLiveServer(world) { port, _, client in
                let session = world.sessions["u1"]!
                let headers = jsonHeaders(bearer: session)
                let id = String(try await world.send("order 7", to: ["u1", "u2"]))
                let streams = [
                    try await TestStream.open(port: port, session: session), try await TestStream.open(port: port, session: session),
                ]
                func item() async throws -> [String: Any]? {
                    let body = try jsonObject(try await client.execute(uri: "/v1/me/channels/feed/collection", method: .get, headers: headers))
                    return (body["notifications"] as? [[String: Any]])?.first { $0["id"] as? String == id }
                }
                // The template's buttons, rendered with the send's variables.
                let offered = try #require(try await item()?["actions"] as? [[String: Any]])
                #expect(offered.compactMap { $0["id"] as? String } == ["ack", "open"])
                #expect(offered[1]["label"] as? String == "Open order 7" && offered[1]["url"] as? String == "https://example.com/open")
                #expect(try await item()?["actions_done"] as? [String] == [])
                let before = try #require(try await item()?["position"] as? String)

                func press(_ action: String, as user: String = "u1") async throws -> TestResponse {
                    try await client.execute(
                        uri: "/v1/me/notifications/\(id)/actions/\(action)",
                        method: .post,
                        headers: jsonHeaders(bearer: world.sessions[user])
                    )
                }
                #expect(try await press("ack").status == .ok)
                for stream in streams { _ = try await stream.next(type: "channel.read") }
                let pressed = try #require(try await item())
                #expect(pressed["actions_done"] as? [String] == ["ack"])
                #expect(try #require(Int64(pressed["position"] as? String ?? "")) > Int64(before)!)
                // Pressed again: nothing changes; another action adds to it; another user's copy is theirs.
                #expect(try await press("ack").status == .ok)
                #expect(try await press("open").status == .ok)
                #expect(try await press("ack", as: "u2").status == .ok)
                #expect(try await item()?["actions_done"] as? [String] == ["ack", "open"])
                let view = try jsonObject(
                    try await client.execute(uri: "/v1/notifications/\(id)", method: .get, headers: jsonHeaders(bearer: Self.adminToken))
                )
                let counts = try #require(view["counts"] as? [String: Any])
                #expect(counts["acted"] as? Int == 2)
                #expect((counts["actions"] as? [String: Any])?["ack"] as? Int == 2 && (counts["actions"] as? [String: Any])?["open"] as? Int == 1)

                // Refused: an action the notification does not offer, a notification not the user's.
                let unknown = try await press("approve")
                let unknownCode = try errorCode(unknown)
                #expect(unknown.status == .notFound && unknownCode == "action_not_found")
                let other = String(try await world.send("not yours", to: ["u2"]))
                let stranger = try await client.execute(uri: "/v1/me/notifications/\(other)/actions/ack", method: .post, headers: headers)
                let strangerCode = try errorCode(stranger)
                #expect(stranger.status == .notFound && strangerCode == "notification_not_found")
                for stream in streams { await stream.close() }
            }
        }
    }

    @Test func badInboxStateBodiesAreRefusedAndChangeNothing() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1"])
            defer { Task { await world.shutdown() } }
            let id = String(try await world.send("one", to: ["u1"]))
            try await withLiveServer(world) { _, _, client in
                let headers = jsonHeaders(bearer: world.sessions["u1"]!)
                let cases: [(String, String?, String)] = [
                    ("archive", nil, "invalid_notification_ids"),
                    ("archive", "{}", "invalid_archive"),
                    ("archive", #"{"scope":"some"}"#, "invalid_archive"),
                    ("archive", #"{"scope":"all","notification_ids":["\#(id)"]}"#, "invalid_archive"),
                    ("archive", #"{"notification_ids":[]}"#, "invalid_notification_ids"),
                    ("unread", #"{"notification_ids":["x"]}"#, "invalid_notification_ids"),
                    ("unread", #"{"scope":"all"}"#, "invalid_notification_ids"),
                    (
                        "unarchive", #"{"notification_ids":[\#((0...100).map { "\"\($0 + 1)\"" }.joined(separator: ","))]}"#,
                        "invalid_notification_ids"
                    ),
                    ("delete", "[]", "invalid_json"),
                ]
                for (route, body, code) in cases {
                    let response = try await client.execute(
                        uri: "/v1/me/channels/feed/\(route)",
                        method: .post,
                        headers: headers,
                        body: body.map { ByteBuffer(string: $0) }
                    )
                    #expect(response.status == .badRequest, "\(route) \(body ?? "(none)")")
                    if code != "invalid_json" { #expect(try errorCode(response) == code, "\(route) \(body ?? "(none)")") }
                }
                let unknownStatus = try await client.execute(uri: "/v1/me/channels/feed/collection?status=starred", method: .get, headers: headers)
                let unknownCode = try errorCode(unknownStatus)
                #expect(unknownStatus.status == .badRequest && unknownCode == "invalid_status")
                let missing = try await client.execute(
                    uri: "/v1/me/channels/nowhere/archive",
                    method: .post,
                    headers: headers,
                    body: ByteBuffer(string: #"{"scope":"all"}"#)
                )
                #expect(missing.status == .notFound)
                // Nothing changed: the copy is unread, not archived, not deleted.
                let copy = try await db.client.query(
                    "SELECT status, archived, deleted FROM notification_recipients WHERE notification_id = \(Int64(id)!)"
                ).first!.decode((Int16, Bool, Bool).self)
                #expect(copy.0 < 2 && !copy.1 && !copy.2)
            }
        }
    }
}
