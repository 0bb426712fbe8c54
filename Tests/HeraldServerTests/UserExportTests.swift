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

/// `GET /v1/users/{user_id}/export`: everything Herald holds about a user, as one streamed document.
@Suite("User export")
struct UserExportTests {
    static let adminToken = ReceiptsTests.adminToken

    @Test func anExportHoldsEverythingOfTheUsersAndNothingSecret() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let receipts = ReceiptsTests()
            let sessions = try await receipts.seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.live) { client in
                let admin = jsonHeaders(bearer: Self.adminToken)
                let first = try await receipts.send(client, to: ["u1", "u2"])
                let second = try await receipts.send(client, to: ["u1"])
                let deleted = try await receipts.send(client, to: ["u1"])
                _ = try await receipts.send(client, to: ["u2"])
                #expect(try await client.execute(uri: "/v1/notifications/\(deleted)", method: .delete, headers: admin).status == .noContent)
                #expect(try await receipts.post(client, "/v1/me/channels/feed/read", sessions["u1"], "{}").status == .ok)
                #expect(
                    try await receipts.post(client, "/v1/me/events", sessions["u1"], #"{"type":"viewed","notification_ids":["\#(first)"]}"#)
                        .status == .noContent
                )
                let device = String(repeating: "ab", count: 32)
                let registered = try await client.execute(
                    uri: "/v1/me/devices/\(device)",
                    method: .put,
                    headers: jsonHeaders(bearer: sessions["u1"]),
                    body: ByteBuffer(string: #"{"environment":"sandbox","topic":"com.example.app"}"#)
                )
                #expect(registered.status == .created)
                let preferences = try await client.execute(
                    uri: "/v1/me/push-preferences",
                    method: .put,
                    headers: jsonHeaders(bearer: sessions["u1"]),
                    body: ByteBuffer(string: #"{"push_trigger_option":"mention_only"}"#)
                )
                #expect(preferences.status == .ok)

                let response = try await client.execute(uri: "/v1/users/u1/export", method: .get, headers: admin)
                #expect(response.status == .ok)
                // Streamed: no length known up front.
                #expect(response.headers[.contentLength] == nil)
                #expect(response.headers[.transferEncoding] == "chunked")
                let text = String(buffer: response.body)
                let export = try jsonObject(response)
                #expect((export["user"] as? [String: Any])?["user_id"] as? String == "u1")
                #expect(export["exported_at"] is String)

                let copies = try #require(export["notifications"] as? [[String: Any]])
                #expect(Set(copies.compactMap { $0["notification_id"] as? Int }.map(String.init)) == [first, second, deleted])
                let byID = Dictionary(uniqueKeysWithValues: copies.map { (String($0["notification_id"] as! Int), $0) })
                #expect(byID[first]?["status"] as? String == "read")
                #expect((byID[first]?["data"] as? [String: Any])?["title"] as? String == "t")
                #expect(byID[deleted]?["deleted"] as? Bool == true)
                #expect(byID[deleted]?["data"] is NSNull)

                let sessionsListed = try #require(export["sessions"] as? [[String: Any]])
                #expect(sessionsListed.count == 1)
                #expect(Set(sessionsListed[0].keys) == ["created_at", "expires_at"])
                #expect(!text.contains(try #require(sessions["u1"])))
                #expect((export["devices"] as? [[String: Any]])?.map { $0["token"] as? String } == [device])
                #expect((export["push_preferences"] as? [String: Any])?["trigger_option"] as? String == "mention_only")
                #expect((export["channel_push_preferences"] as? [Any])?.isEmpty == true)
                #expect((export["channels"] as? [[String: Any]])?.map { $0["channel_url"] as? String } == ["feed"])
                let events = try #require(export["events"] as? [[String: Any]])
                #expect(events.count == 1 && events.first?["kind"] as? String == "viewed")
                #expect((export["push_failures"] as? [Any])?.isEmpty == true)
                // The other user's copies are not in it.
                #expect(copies.count == 3)

                // A user without preferences has null there.
                let other = try jsonObject(try await client.execute(uri: "/v1/users/u3/export", method: .get, headers: admin))
                #expect(other["push_preferences"] is NSNull)
                #expect((other["notifications"] as? [Any])?.isEmpty == true)
            }
        }
    }

    /// Every section pages by its cursor without skipping or repeating a row.
    @Test func everySectionPagesWithoutGapsOrRepeats() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let receipts = ReceiptsTests()
            let sessions = try await receipts.seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                var ids: [String] = []
                for _ in 0..<7 { ids.append(try await receipts.send(client, to: ["u1"])) }
                let body = #"{"type":"clicked","notification_ids":[\#(ids.map { "\"\($0)\"" }.joined(separator: ","))]}"#
                #expect(try await receipts.post(client, "/v1/me/events", sessions["u1"], body).status == .noContent)
                for _ in 0..<4 {
                    #expect(
                        try await client.execute(uri: "/v1/users/u1/sessions", method: .post, headers: jsonHeaders(bearer: Self.adminToken)).status
                            == .created
                    )
                }
            }
            let store = UserExportStore(client: db.client)
            let key = try #require(try await store.user("u1")?.key)
            for section in UserExportStore.Section.allCases {
                var all: [[UInt8]] = []
                var cursor = UserExportStore.Cursor.start
                while true {
                    let (objects, last) = try await store.page(section, userKey: key, after: cursor, limit: 2)
                    all += objects
                    guard let last, objects.count == 2 else { break }
                    cursor = last
                }
                let whole = try await store.page(section, userKey: key, after: .start, limit: 1000).objects
                #expect(all == whole, "\(section)")
            }
            #expect(try await store.page(.notifications, userKey: key, after: .start, limit: 1000).objects.count == 7)
            #expect(try await store.page(.events, userKey: key, after: .start, limit: 1000).objects.count == 7)
            #expect(try await store.page(.sessions, userKey: key, after: .start, limit: 1000).objects.count == 5)
        }
    }
}
