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

/// Template administration and versioning over HTTP against a real database.
@Suite("Templates over HTTP")
struct TemplatesHTTPTests {
    static let adminToken = "templates-admin-token"

    func application(_ db: TestDatabase) throws -> some ApplicationProtocol {
        try heraldApplication(db, adminToken: Self.adminToken)
    }

    var admin: HTTPFields { jsonHeaders(bearer: Self.adminToken) }

    func json(_ response: TestResponse) throws -> [String: Any] { try jsonObject(response) }

    static let v1 =
        #"{"name":"Payment failed","variables":[{"name":"amount","type":"string","required":true}],"data":{"title":"Payment of {{amount}} failed"}}"#
    static let v2 =
        #"{"name":"Payment failed","variables":[{"name":"amount","type":"string","required":true}],"data":{"title":"We could not charge {{amount}}"}}"#

    @Test func changedDefinitionsGetNewVersionsAndOldOnesStay() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                let first = try await client.execute(
                    uri: "/v1/templates/payment.failed",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(string: Self.v1)
                )
                #expect(first.status == .created)
                #expect(try json(first)["version"] as? Int == 1)
                #expect(try json(first)["outcome"] as? String == "created")

                let again = try await client.execute(
                    uri: "/v1/templates/payment.failed",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(string: Self.v1)
                )
                #expect(again.status == .ok)
                #expect(try json(again)["version"] as? Int == 1)
                #expect(try json(again)["outcome"] as? String == "unchanged")

                let second = try await client.execute(
                    uri: "/v1/templates/payment.failed",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(string: Self.v2)
                )
                #expect(try json(second)["version"] as? Int == 2)
                #expect(try json(second)["outcome"] as? String == "updated")

                let latest = try await client.execute(uri: "/v1/templates/payment.failed", method: .get, headers: admin)
                #expect(try json(latest)["version"] as? Int == 2)
                let old = try await client.execute(uri: "/v1/templates/payment.failed?version=1", method: .get, headers: admin)
                #expect(((try json(old)["data"] as? [String: Any])?["title"] as? String) == "Payment of {{amount}} failed")

                _ = try await client.execute(
                    uri: "/v1/templates/digest",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(string: #"{"data":{"text":"Your week"}}"#)
                )
                let list = try await client.execute(uri: "/v1/templates", method: .get, headers: admin)
                let listed = (try json(list)["templates"] as? [[String: Any]]) ?? []
                #expect(listed.map { $0["key"] as? String } == ["digest", "payment.failed"])
                #expect(listed.map { $0["version"] as? Int } == [1, 2])
                #expect(try await client.execute(uri: "/v1/templates/nope", method: .get, headers: admin).status == .notFound)
            }
            #expect(try await db.client.query("SELECT count(*) FROM templates").first?.decode(Int.self) == 3)
        }
    }

    @Test func invalidTemplatesAreRefusedWithTheirPath() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                let cases: [(String, String, String)] = [
                    ("/v1/templates/a", #"{"data":{"t":"{{who}}"}}"#, "$.data.t uses {{who}}, which is not a declared variable."),
                    (
                        "/v1/templates/a", #"{"variables":[{"name":"n","type":"number","default":"x"}],"data":{}}"#,
                        "$.variables[0].default must be a number."
                    ),
                    ("/v1/templates/a", #"{"key":"b","data":{}}"#, "$.key must match the key in the path."),
                    ("/v1/templates/a", #"{"data":"not an object"}"#, "$.data must be a JSON object."),
                    ("/v1/templates/a", #"{"name":"no data"}"#, "$.data is required."),
                ]
                for (uri, body, message) in cases {
                    let response = try await client.execute(uri: uri, method: .put, headers: admin, body: ByteBuffer(string: body))
                    #expect(response.status == .badRequest, "\(body)")
                    #expect((try json(response)["error"] as? [String: Any])?["message"] as? String == message, "\(body)")
                }
                #expect(
                    try await client.execute(uri: "/v1/templates/Bad%20Key", method: .put, headers: admin, body: ByteBuffer(string: #"{"data":{}}"#))
                        .status == .badRequest
                )
            }
            #expect(try await db.client.query("SELECT count(*) FROM templates").first?.decode(Int.self) == 0)
        }
    }
}
