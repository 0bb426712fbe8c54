import Foundation
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Prometheus
import Testing

/// Channel administration over HTTP against a real database.
@Suite("Channels")
struct ChannelsTests {
    static let adminToken = "channels-admin-token"

    func application(_ db: TestDatabase) throws -> some ApplicationProtocol {
        try heraldApplication(db, adminToken: Self.adminToken)
    }

    var admin: HTTPFields { jsonHeaders(bearer: Self.adminToken) }

    func json(_ response: TestResponse) throws -> [String: Any] { try jsonObject(response) }

    static let orders =
        #"{"kind":"feed","name":"Orders","cover_url":"https://cdn.example.com/orders.png","categories":[{"id":"shipping","name":"Shipping","is_default":true},{"id":"billing","name":"Billing","is_default":false}]}"#

    @Test func createReadReplaceListDelete() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                let created = try await client.execute(
                    uri: "/v1/channels/orders",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(string: Self.orders)
                )
                #expect(created.status == .created)
                let body = try json(created)
                #expect(body["channel_url"] as? String == "orders")
                #expect(body["kind"] as? String == "feed")
                #expect((body["categories"] as? [[String: Any]])?.count == 2)

                let same = try await client.execute(uri: "/v1/channels/orders", method: .put, headers: admin, body: ByteBuffer(string: Self.orders))
                #expect(same.status == .ok)

                let renamed = try await client.execute(
                    uri: "/v1/channels/orders",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(string: #"{"kind":"feed","name":"Your orders"}"#)
                )
                #expect(renamed.status == .ok)
                #expect(try json(renamed)["name"] as? String == "Your orders")
                #expect((try json(renamed)["categories"] as? [Any])?.isEmpty == true)

                let kindChange = try await client.execute(
                    uri: "/v1/channels/orders",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(string: #"{"kind":"chat"}"#)
                )
                #expect(kindChange.status == .conflict)
                #expect(try errorCode(kindChange) == "kind_change")

                for name in ["support", "alerts", "digest"] {
                    _ = try await client.execute(
                        uri: "/v1/channels/\(name)",
                        method: .put,
                        headers: admin,
                        body: ByteBuffer(string: #"{"kind":"chat"}"#)
                    )
                }
                let page1 = try await client.execute(uri: "/v1/channels?limit=2", method: .get, headers: admin)
                #expect(((try json(page1)["channels"] as? [[String: Any]]) ?? []).map { $0["channel_url"] as? String } == ["alerts", "digest"])
                #expect(try json(page1)["next"] as? String == "digest")
                let page2 = try await client.execute(uri: "/v1/channels?limit=2&after=digest", method: .get, headers: admin)
                #expect(((try json(page2)["channels"] as? [[String: Any]]) ?? []).map { $0["channel_url"] as? String } == ["orders", "support"])

                let fetched = try await client.execute(uri: "/v1/channels/support", method: .get, headers: admin)
                #expect(try json(fetched)["kind"] as? String == "chat")
                #expect(try await client.execute(uri: "/v1/channels/support", method: .delete, headers: admin).status == .ok)
                let gone = try await client.execute(uri: "/v1/channels/support", method: .get, headers: admin)
                #expect(gone.status == .notFound)
                #expect(try errorCode(gone) == "channel_not_found")
                #expect(try await client.execute(uri: "/v1/channels/support", method: .delete, headers: admin).status == .notFound)
            }
        }
    }

    @Test func invalidDefinitionsAreRefusedAndNothingIsWritten() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                let cases: [(String, String, String)] = [
                    ("/v1/channels/ok", #"{"kind":"group"}"#, "invalid_json"),
                    ("/v1/channels/ok", #"{"name":"no kind"}"#, "invalid_json"),
                    ("/v1/channels/ok", "", "invalid_channel"),
                    ("/v1/channels/bad%20url", #"{"kind":"feed"}"#, "invalid_channel_url"),
                    ("/v1/channels/ok", #"{"kind":"feed","cover_url":"javascript:alert(1)"}"#, "invalid_channel"),
                    ("/v1/channels/ok", #"{"kind":"feed","categories":[{"id":"a","name":"A","is_default":false}]}"#, "invalid_channel"),
                    (
                        "/v1/channels/ok",
                        #"{"kind":"feed","categories":[{"id":"a","name":"A","is_default":true},{"id":"a","name":"B","is_default":false}]}"#,
                        "invalid_channel"
                    ),
                    ("/v1/channels/ok", #"{"kind":"feed","throttle":{"limit":0,"window":"1h"}}"#, "invalid_channel"),
                    ("/v1/channels/ok", #"{"kind":"feed","throttle":{"limit":5,"window":"8d"}}"#, "invalid_channel"),
                    ("/v1/channels/ok", #"{"kind":"feed","throttle":{"limit":5,"window":"soon"}}"#, "invalid_channel"),
                    ("/v1/channels/ok", #"{"kind":"feed","throttle":{"limit":5}}"#, "invalid_json"),
                    ("/v1/channels/ok", #"{"kind":"feed","throttle":{"limit":5,"window":"1h","beyond":"shout"}}"#, "invalid_json"),
                    ("/v1/channels/ok", #"{"kind":"feed","throttle":{"limit":5,"window":"1h","per":"user"}}"#, "invalid_json"),
                    ("/v1/channels/ok", #"{"kind":"feed","throttle":{"limit":5,"window":"1h","every":2}}"#, "unknown_field"),
                ]
                for (uri, body, code) in cases {
                    let response = try await client.execute(uri: uri, method: .put, headers: admin, body: ByteBuffer(string: body))
                    #expect(response.status == .badRequest, "\(uri) \(body)")
                    #expect(try errorCode(response) == code, "\(uri) \(body)")
                }
                let noDefault = try await client.execute(
                    uri: "/v1/channels/ok",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(string: #"{"kind":"feed","categories":[{"id":"a","name":"A","is_default":false}]}"#)
                )
                #expect(
                    (try json(noDefault)["error"] as? [String: Any])?["message"] as? String
                        == "categories must have exactly one entry with is_default: true."
                )
                #expect(try await client.execute(uri: "/v1/channels?limit=0", method: .get, headers: admin).status == .badRequest)
            }
            #expect(try await db.client.query("SELECT count(*) FROM channels").first?.decode(Int.self) == 0)
        }
    }
}
