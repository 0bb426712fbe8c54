import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Testing

/// Topics over HTTP against a real database: the admin's routes and a user's own. Sends to topics
/// are in `CollectionTests+Topics.swift` (they watch the transaction horizon).
@Suite("Topics")
struct TopicsTests {
    let collections = CollectionTests()
    var admin: HTTPFields { jsonHeaders(bearer: CollectionTests.adminToken) }

    func user(_ world: CollectionTests.World, _ id: String) -> HTTPFields { jsonHeaders(bearer: world.sessions[id]) }

    @discardableResult
    func call(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        _ headers: HTTPFields,
        _ body: String? = nil,
        expect status: HTTPResponse.Status
    ) async throws -> [String: Any] {
        let response = try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
        #expect(response.status == status, "\(method) \(uri): \(String(buffer: response.body))")
        return response.body.readableBytes == 0 ? [:] : try jsonObject(response)
    }

    func expectError(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        _ headers: HTTPFields,
        _ body: String? = nil,
        status: HTTPResponse.Status,
        code: String
    ) async throws {
        let response = try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
        #expect(response.status == status, "\(method) \(uri) \(body ?? "")")
        #expect(try errorCode(response) == code, "\(method) \(uri) \(body ?? ""): \(String(buffer: response.body))")
    }

    func subscriberIDs(_ client: some TestClientProtocol, _ topic: String) async throws -> [String: Bool] {
        var found: [String: Bool] = [:]
        var after: String?
        repeat {
            let page = try await call(
                client,
                .get,
                "/v1/topics/\(topic)/subscribers?limit=2" + (after.map { "&after=\($0)" } ?? ""),
                admin,
                expect: .ok
            )
            for subscriber in page["subscribers"] as? [[String: Any]] ?? [] {
                found[subscriber["user_id"] as! String] = subscriber["muted"] as? Bool
            }
            after = page["next"] as? String
        } while after != nil
        return found
    }

    @Test func anAdminDefinesTopicsAndTheirSubscribers() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await collections.world(db, users: ["u1", "u2", "u3"])
            _ = world
            try await collections.app(db).test(.router) { client in
                let created = try await call(
                    client,
                    .put,
                    "/v1/topics/order:A-1",
                    admin,
                    #"{"name":"Order A-1","self_subscribe":false}"#,
                    expect: .created
                )
                #expect(created["topic_id"] as? String == "order:A-1" && created["name"] as? String == "Order A-1")
                #expect(created["self_subscribe"] as? Bool == false)
                try await call(client, .put, "/v1/topics/order:A-1", admin, #"{"name":"Order A-1"}"#, expect: .ok)
                try await call(client, .put, "/v1/topics/project.42", admin, #"{"self_subscribe":true}"#, expect: .created)
                try await call(client, .put, "/v1/topics/zeta", admin, expect: .created)

                // Bulk subscribe: duplicates count once, a second add changes nothing.
                let added = try await call(
                    client,
                    .post,
                    "/v1/topics/order:A-1/subscribers",
                    admin,
                    #"{"user_ids":["u1","u2","u1"]}"#,
                    expect: .ok
                )
                #expect(added["added"] as? Int == 2)
                let again = try await call(
                    client,
                    .post,
                    "/v1/topics/order:A-1/subscribers",
                    admin,
                    #"{"user_ids":["u1","u2","u3"]}"#,
                    expect: .ok
                )
                #expect(again["added"] as? Int == 1)
                #expect(try await subscriberIDs(client, "order:A-1") == ["u1": false, "u2": false, "u3": false])
                let removed = try await call(
                    client,
                    .post,
                    "/v1/topics/order:A-1/subscribers/remove",
                    admin,
                    #"{"user_ids":["u3","nobody"]}"#,
                    expect: .ok
                )
                #expect(removed["removed"] as? Int == 1)
                let fetched = try await call(client, .get, "/v1/topics/order:A-1", admin, expect: .ok)
                #expect(fetched["subscribers"] as? Int == 2 && fetched["muted"] as? Int == 0)

                // Lists page by id.
                let first = try await call(client, .get, "/v1/topics?limit=2", admin, expect: .ok)
                #expect((first["topics"] as? [[String: Any]])?.compactMap { $0["topic_id"] as? String } == ["order:A-1", "project.42"])
                #expect(first["next"] as? String == "project.42")
                let second = try await call(client, .get, "/v1/topics?limit=2&after=project.42", admin, expect: .ok)
                #expect((second["topics"] as? [[String: Any]])?.compactMap { $0["topic_id"] as? String } == ["zeta"])
                #expect(second["next"] == nil)

                // Bad input: a clear error, and nothing changed.
                try await expectError(client, .put, "/v1/topics/bad%20id", admin, status: .badRequest, code: "invalid_topic_id")
                try await expectError(
                    client,
                    .put,
                    "/v1/topics/\(String(repeating: "x", count: 129))",
                    admin,
                    status: .badRequest,
                    code: "invalid_topic_id"
                )
                try await expectError(
                    client,
                    .put,
                    "/v1/topics/zeta",
                    admin,
                    #"{"name":"\#(String(repeating: "n", count: 256))"}"#,
                    status: .badRequest,
                    code: "invalid_topic"
                )
                try await expectError(client, .put, "/v1/topics/zeta", admin, #"{"self_subscribe":"yes"}"#, status: .badRequest, code: "invalid_json")
                try await expectError(client, .put, "/v1/topics/zeta", admin, #"{"colour":"red"}"#, status: .badRequest, code: "unknown_field")
                try await expectError(
                    client,
                    .post,
                    "/v1/topics/order:A-1/subscribers",
                    admin,
                    #"{"user_ids":["u3","ghost1","ghost2"]}"#,
                    status: .badRequest,
                    code: "unknown_users"
                )
                try await expectError(
                    client,
                    .post,
                    "/v1/topics/order:A-1/subscribers",
                    admin,
                    #"{"user_ids":[]}"#,
                    status: .badRequest,
                    code: "invalid_topic"
                )
                try await expectError(
                    client,
                    .post,
                    "/v1/topics/order:A-1/subscribers",
                    admin,
                    #"{"user_ids":[""]}"#,
                    status: .badRequest,
                    code: "invalid_topic"
                )
                try await expectError(client, .post, "/v1/topics/order:A-1/subscribers", admin, status: .badRequest, code: "invalid_topic")
                try await expectError(
                    client,
                    .post,
                    "/v1/topics/missing/subscribers",
                    admin,
                    #"{"user_ids":["u1"]}"#,
                    status: .notFound,
                    code: "topic_not_found"
                )
                try await expectError(client, .get, "/v1/topics/missing", admin, status: .notFound, code: "topic_not_found")
                try await expectError(client, .get, "/v1/topics/missing/subscribers", admin, status: .notFound, code: "topic_not_found")
                try await expectError(client, .get, "/v1/topics/zeta/subscribers?after=x", admin, status: .badRequest, code: "invalid_topic")
                try await expectError(client, .get, "/v1/topics", user(world, "u1"), status: .forbidden, code: "forbidden")
                #expect(try await subscriberIDs(client, "order:A-1") == ["u1": false, "u2": false])

                try await call(client, .delete, "/v1/topics/zeta", admin, expect: .noContent)
                try await expectError(client, .delete, "/v1/topics/zeta", admin, status: .notFound, code: "topic_not_found")
            }
        }
    }

    @Test func aUserFollowsMutesAndUnfollows() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await collections.world(db, users: ["u1", "u2"])
            try await collections.app(db).test(.router) { client in
                try await call(client, .put, "/v1/topics/open", admin, #"{"name":"Open","self_subscribe":true}"#, expect: .created)
                try await call(client, .put, "/v1/topics/closed", admin, #"{"name":"Closed"}"#, expect: .created)
                let u1 = user(world, "u1")
                #expect((try await call(client, .get, "/v1/me/topics", u1, expect: .ok)["topics"] as? [Any])?.isEmpty == true)

                let followed = try await call(client, .put, "/v1/me/topics/open", u1, expect: .created)
                #expect(followed["topic_id"] as? String == "open" && followed["muted"] as? Bool == false)
                try await call(client, .put, "/v1/me/topics/open", u1, expect: .ok)
                // The app chooses a closed topic's subscribers: a user can neither join nor leave it…
                try await expectError(client, .put, "/v1/me/topics/closed", u1, status: .forbidden, code: "topic_not_self_subscribe")
                try await call(client, .post, "/v1/topics/closed/subscribers", admin, #"{"user_ids":["u1"]}"#, expect: .ok)
                try await expectError(client, .delete, "/v1/me/topics/closed", u1, status: .forbidden, code: "topic_not_self_subscribe")
                // …but may mute it, and unmute it.
                let muted = try await call(client, .put, "/v1/me/topics/closed", u1, #"{"muted":true}"#, expect: .ok)
                #expect(muted["muted"] as? Bool == true)
                #expect(try await subscriberIDs(client, "closed") == ["u1": true])
                let mine = try await call(client, .get, "/v1/me/topics", u1, expect: .ok)
                #expect(
                    (mine["topics"] as? [[String: Any]])?.map { "\($0["topic_id"]!) \($0["muted"] as! Bool) \($0["self_subscribe"] as! Bool)" } == [
                        "closed true false", "open false true",
                    ]
                )
                let paged = try await call(client, .get, "/v1/me/topics?limit=1", u1, expect: .ok)
                #expect(paged["next"] as? String == "closed")

                try await expectError(client, .put, "/v1/me/topics/open", u1, #"{"muted":1}"#, status: .badRequest, code: "invalid_json")
                try await expectError(client, .put, "/v1/me/topics/nothing", u1, status: .notFound, code: "topic_not_found")
                try await expectError(client, .delete, "/v1/me/topics/open", user(world, "u2"), status: .notFound, code: "not_subscribed")
                try await call(client, .delete, "/v1/me/topics/open", u1, expect: .noContent)
                #expect(try await subscriberIDs(client, "open").isEmpty)
                try await expectError(client, .get, "/v1/me/topics", admin, status: .unauthorized, code: "unauthorized")

                // The export lists the user's subscriptions; erasure removes them.
                let export = try await call(client, .get, "/v1/users/u1/export", admin, expect: .ok)
                #expect((export["topics"] as? [[String: Any]])?.map { $0["topic_id"] as? String } == ["closed"])
                try await call(client, .delete, "/v1/users/u1", admin, expect: .accepted)
                #expect(try await subscriberIDs(client, "closed").isEmpty)
            }
        }
    }
}
