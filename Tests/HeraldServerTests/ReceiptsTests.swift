import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Testing

/// Delivery receipts (`POST /v1/me/delivered`), view/click events (`POST /v1/me/events`) and what the
/// admin sees of them, over HTTP against a real database.
@Suite("Receipts")
struct ReceiptsTests {
    static let adminToken = "test-admin-token-receipts-01234567"

    /// A feed channel, a template, users u1…u3 with sessions; returns the sessions.
    func seed(_ db: TestDatabase) async throws -> [String: String] {
        _ = try await ChannelStore(client: db.client).put(Channel(url: "feed", kind: .feed, name: "Feed"))
        _ = try await TemplateStore(client: db.client).put(.plain)
        var sessions: [String: String] = [:]
        for user in ["u1", "u2", "u3"] {
            _ = try await UserStore(client: db.client).upsert(id: user, nickname: nil, profileURL: nil)
            sessions[user] = try #require(try await SessionStore(client: db.client).create(userID: user, lifetime: 3600)).token.text
        }
        return sessions
    }

    func send(_ client: some TestClientProtocol, to users: [String]) async throws -> String {
        let response = try await client.execute(
            uri: "/v1/notifications",
            method: .post,
            headers: jsonHeaders(bearer: Self.adminToken),
            body: ByteBuffer(
                string: #"{"channel_url":"feed","template_key":"plain","variables":{"title":"t"},"targets":["#
                    + users.map { "\"\($0)\"" }.joined(separator: ",") + "]}"
            )
        )
        #expect(response.status == .created)
        return try #require(try jsonObject(response)["id"] as? String)
    }

    func post(_ client: some TestClientProtocol, _ path: String, _ session: String?, _ body: String) async throws -> TestResponse {
        try await client.execute(uri: path, method: .post, headers: jsonHeaders(bearer: session), body: ByteBuffer(string: body))
    }

    /// The user's status of each notification in the feed, by id.
    func statuses(_ client: some TestClientProtocol, _ session: String?) async throws -> [String: String] {
        let response = try await client.execute(uri: "/v1/me/channels/feed/collection", method: .get, headers: jsonHeaders(bearer: session))
        let items = try #require(try jsonObject(response)["notifications"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: items.map { ($0["id"] as! String, $0["status"] as! String) })
    }

    @Test func receiptsAreIdempotentNeverDowngradeReadAndRefuseOthersIDs() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let sessions = try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let shared = try await send(client, to: ["u1", "u2"])
                let onlyU2 = try await send(client, to: ["u2"])
                let alsoU1 = try await send(client, to: ["u1"])

                // A receipt with the herald object of a push; then the same again: nothing changes.
                let first = try await post(
                    client,
                    "/v1/me/delivered",
                    sessions["u1"],
                    #"{"herald":{"type":"refresh","notification_id":"\#(shared)","badge":2}}"#
                )
                #expect(first.status == .ok)
                #expect(try jsonObject(first)["updated"] as? [String] == [shared])
                let again = try await post(client, "/v1/me/delivered", sessions["u1"], #"{"notification_ids":["\#(shared)"]}"#)
                #expect(try jsonObject(again)["updated"] as? [String] == [])
                #expect(try await statuses(client, sessions["u1"])[shared] == "DELIVERED")

                // An alert push's message_id (a number in the seed's format) works too.
                let alert = try await post(client, "/v1/me/delivered", sessions["u1"], #"{"herald":{"message_id":\#(alsoU1)}}"#)
                #expect(try jsonObject(alert)["updated"] as? [String] == [alsoU1])

                // READ stays READ; the delivery time is still recorded.
                #expect(try await post(client, "/v1/me/channels/feed/read", sessions["u2"], "{}").status == .ok)
                let late = try await post(client, "/v1/me/delivered", sessions["u2"], #"{"notification_ids":["\#(shared)","\#(onlyU2)"]}"#)
                #expect(try jsonObject(late)["updated"] as? [String] == [])
                #expect(try await statuses(client, sessions["u2"]) == [shared: "READ", onlyU2: "READ"])

                // Another user's id: refused, and nothing of the call is written.
                let u3Own = try await send(client, to: ["u3"])
                let refused = try await post(client, "/v1/me/delivered", sessions["u3"], #"{"notification_ids":["\#(u3Own)","\#(onlyU2)"]}"#)
                #expect(refused.status == .notFound)
                #expect(try errorCode(refused) == "notification_not_found")
                #expect(try await statuses(client, sessions["u3"])[u3Own] == "SENT")
                let unknown = try await post(client, "/v1/me/delivered", sessions["u3"], #"{"notification_ids":["999999"]}"#)
                #expect(unknown.status == .notFound)

                // Bad receipts are 400s naming the problem.
                for (body, code) in [
                    ("{}", "invalid_receipt"), (#"{"herald":"x"}"#, "invalid_receipt"), (#"{"herald":{"type":"refresh"}}"#, "invalid_receipt"),
                    (#"{"notification_ids":["abc"]}"#, "invalid_notification_id"), (#"{"herald":{"message_id":1.5}}"#, "invalid_receipt"),
                    (#"{"notification_ids":[\#((1...101).map { "\"\($0)\"" }.joined(separator: ","))]}"#, "invalid_notification_ids"),
                ] {
                    let response = try await post(client, "/v1/me/delivered", sessions["u1"], body)
                    #expect(response.status == .badRequest, "\(body)")
                    #expect(try errorCode(response) == code, "\(body)")
                }
                #expect(try await post(client, "/v1/me/delivered", nil, #"{"notification_ids":["1"]}"#).status == .unauthorized)

                // The admin view: counts by furthest status, and each member with times, paged.
                let view = try await client.execute(uri: "/v1/notifications/\(shared)", method: .get, headers: jsonHeaders(bearer: Self.adminToken))
                let counts = try #require(try jsonObject(view)["counts"] as? [String: Any]).compactMapValues { $0 as? Int }
                #expect(counts["recipients"] == 2 && counts["delivered"] == 1 && counts["read"] == 1 && counts["sent"] == 0)
                #expect(try jsonObject(view)["members"] == nil)
                var members: [[String: Any]] = []
                var cursor: String?
                repeat {
                    let page = try await client.execute(
                        uri: "/v1/notifications/\(shared)?members=true&limit=1" + (cursor.map { "&after=\($0)" } ?? ""),
                        method: .get,
                        headers: jsonHeaders(bearer: Self.adminToken)
                    )
                    #expect(page.status == .ok)
                    let object = try jsonObject(page)
                    members += try #require(object["members"] as? [[String: Any]])
                    cursor = object["next"] as? String
                } while cursor != nil
                #expect(members.map { $0["user_id"] as? String } == ["u1", "u2"])
                #expect(members[0]["status"] as? String == "DELIVERED")
                #expect(members[0]["delivered_at"] is String && members[0]["read_at"] is NSNull)
                #expect(members[1]["status"] as? String == "READ")
                #expect(members[1]["delivered_at"] is String && members[1]["read_at"] is String)
                let badMembers = try await client.execute(
                    uri: "/v1/notifications/\(shared)?members=yes",
                    method: .get,
                    headers: jsonHeaders(bearer: Self.adminToken)
                )
                #expect(badMembers.status == .badRequest)
            }
        }
    }

    @Test func viewsAndClicksAreCountedPerUserWithinLimits() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let sessions = try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let id = try await send(client, to: ["u1", "u2"])
                let other = try await send(client, to: ["u3"])
                for (user, type) in [("u1", "viewed"), ("u1", "viewed"), ("u2", "viewed"), ("u1", "clicked")] {
                    let response = try await post(client, "/v1/me/events", sessions[user], #"{"type":"\#(type)","notification_ids":["\#(id)"]}"#)
                    #expect(response.status == .noContent)
                }
                let view = try await client.execute(uri: "/v1/notifications/\(id)", method: .get, headers: jsonHeaders(bearer: Self.adminToken))
                let counts = try #require(try jsonObject(view)["counts"] as? [String: Any]).compactMapValues { $0 as? Int }
                #expect(counts["viewed"] == 2 && counts["clicked"] == 1)
                let logged = try await db.client.query("SELECT count FROM notification_events WHERE kind = 1 ORDER BY count DESC").map {
                    try $0.decode(Int32.self)
                }
                #expect(logged == [2, 1])

                let tooMany = (1...31).map { _ in "\"\(id)\"" }.joined(separator: ",")
                for (body, status, code) in [
                    (#"{"type":"viewed","notification_ids":[\#(tooMany)]}"#, HTTPResponse.Status.badRequest, "invalid_notification_ids"),
                    (#"{"type":"viewed","notification_ids":[]}"#, .badRequest, "invalid_notification_ids"),
                    (#"{"type":"liked","notification_ids":["\#(id)"]}"#, .badRequest, "invalid_event"),
                    (#"{"type":"clicked","notification_ids":["\#(id)","\#(other)"]}"#, .notFound, "notification_not_found"),
                ] {
                    let response = try await post(client, "/v1/me/events", sessions["u1"], body)
                    #expect(response.status == status, "\(body)")
                    #expect(try errorCode(response) == code, "\(body)")
                }
                // The refused call wrote nothing: u1's click count is still one.
                let clicks = try await db.client.query("SELECT count FROM notification_events WHERE kind = 2").map { try $0.decode(Int32.self) }
                #expect(clicks == [1])
            }
        }
    }
}
