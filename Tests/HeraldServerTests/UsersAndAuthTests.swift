import Foundation
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Prometheus
import Testing

/// Users, sessions and the admin/user authentication rules, over HTTP against a real database.
@Suite("Users and auth")
struct UsersAndAuthTests {
    static let adminToken = "test-admin-token-0123456789abcdef"

    func application(_ db: TestDatabase) throws -> some ApplicationProtocol {
        try heraldApplication(db, adminToken: Self.adminToken)
    }

    func headers(_ token: String?) -> HTTPFields { jsonHeaders(bearer: token) }

    func json(_ response: TestResponse) throws -> [String: Any] { try jsonObject(response) }

    /// A request whose statement waits on a lock held elsewhere answers 503 once the pool's statement
    /// timeout passes, instead of holding its connection; once the lock goes the same request succeeds.
    @Test func aStuckStatementAnswers503AndFreesItsConnection() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(id: "erin", nickname: nil, profileURL: nil)
            let session = try #require(try await SessionStore(client: db.client).create(userID: "erin", lifetime: 3600)).token.text
            let client = PostgresClient(
                configuration: .init(conninfo: db.directConninfo, maximumConnections: 2, statementTimeout: .milliseconds(300))
            )
            defer { Task { await client.shutdown() } }
            let dependencies = HeraldApplication.Dependencies(
                client: client,
                migrator: Migrator(client: client, migrations: try TestPostgres.repositoryMigrations()),
                metricsRegistry: PrometheusCollectorRegistry(),
                adminToken: Self.adminToken,
                secrets: nil
            )
            try await Application(router: HeraldApplication.buildRouter(dependencies).router).test(.router) { http in
                try await db.client.withTransaction { connection in
                    try await connection.query("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")
                    let stuck = try await http.execute(uri: "/v1/me/unread", method: .get, headers: headers(session))
                    #expect(stuck.status == .serviceUnavailable)
                    #expect(try errorCode(stuck) == "database_timeout")
                }
                // Both pooled connections are usable again: two requests at once succeed.
                async let first = http.execute(uri: "/v1/me/unread", method: .get, headers: headers(session))
                async let second = http.execute(uri: "/v1/me/unread", method: .get, headers: headers(session))
                #expect(try await first.status == .ok)
                #expect(try await second.status == .ok)
            }
        }
    }

    @Test func createThenUpdateKeepsUnsentFields() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                let created = try await client.execute(
                    uri: "/v1/users/alice",
                    method: .put,
                    headers: headers(Self.adminToken),
                    body: ByteBuffer(string: #"{"nickname":"Alice","profile_url":"https://example.com/a.png"}"#)
                )
                #expect(created.status == .created)
                let body = try json(created)
                #expect(body["user_id"] as? String == "alice")
                #expect(body["nickname"] as? String == "Alice")
                #expect((body["created_at"] as? String)?.hasSuffix("Z") == true)

                let updated = try await client.execute(
                    uri: "/v1/users/alice",
                    method: .put,
                    headers: headers(Self.adminToken),
                    body: ByteBuffer(string: #"{"nickname":"Alice B."}"#)
                )
                #expect(updated.status == .ok)
                #expect(try json(updated)["nickname"] as? String == "Alice B.")
                #expect(try json(updated)["profile_url"] as? String == "https://example.com/a.png")
                // Codable answers come with their keys in one order every time, slashes unescaped.
                for _ in 0..<10 {
                    let again = try await client.execute(uri: "/v1/users/alice", method: .put, headers: headers(Self.adminToken))
                    let text = String(buffer: again.body)
                    let keys = ["created_at", "nickname", "profile_url", "updated_at", "user_id"].map { text.range(of: "\"\($0)\":")?.lowerBound }
                    #expect(keys.allSatisfy { $0 != nil } && keys.map { $0! } == keys.map { $0! }.sorted(), "keys out of order: \(text)")
                    #expect(text.contains("https://example.com/a.png"))
                }

                // No body at all is a valid PUT: creates with defaults.
                let bare = try await client.execute(uri: "/v1/users/bob", method: .put, headers: headers(Self.adminToken))
                #expect(bare.status == .created)
                #expect(try json(bare)["nickname"] as? String == "")
            }
            let stored = try await db.client.query("SELECT count(*) FROM users")
            #expect(try stored.first?.decode(Int.self) == 2)
        }
    }

    @Test func badInputIsAClearJSONError() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                let longID = String(repeating: "x", count: 129)
                let cases: [(String, String, String)] = [
                    ("/v1/users/\(longID)", "{}", "invalid_user_id"),
                    ("/v1/users/bad%01id", "{}", "invalid_user_id"),
                    ("/v1/users/carol", "{not json", "invalid_json"),
                    ("/v1/users/carol", #"{"nickname":42}"#, "invalid_json"),
                    ("/v1/users/carol", "{\"nickname\":\"\(String(repeating: "n", count: 256))\"}", "invalid_nickname"),
                    ("/v1/users/carol", #"{"profile_url":"ftp://example.com/x"}"#, "invalid_profile_url"),
                ]
                for (uri, body, code) in cases {
                    let response = try await client.execute(uri: uri, method: .put, headers: headers(Self.adminToken), body: ByteBuffer(string: body))
                    #expect(response.status == .badRequest, "\(uri) \(body)")
                    #expect(try errorCode(response) == code, "\(uri) \(body)")
                }
                let wrongType = try await client.execute(
                    uri: "/v1/users/carol",
                    method: .put,
                    headers: headers(Self.adminToken),
                    body: ByteBuffer(string: #"{"nickname":42}"#)
                )
                #expect((try json(wrongType)["error"] as? [String: Any])?["message"] as? String == "$.nickname must be a string.")
                let notAnObject = try await client.execute(
                    uri: "/v1/users/carol",
                    method: .put,
                    headers: headers(Self.adminToken),
                    body: ByteBuffer(string: "[1]")
                )
                #expect((try json(notAnObject)["error"] as? [String: Any])?["message"] as? String == "the body must be an object.")
                let huge = try await client.execute(
                    uri: "/v1/users/carol",
                    method: .put,
                    headers: headers(Self.adminToken),
                    body: ByteBuffer(string: "{\"nickname\":\"\(String(repeating: "n", count: 1 << 20))\"}")
                )
                #expect(huge.status == .contentTooLarge)
                #expect(try errorCode(huge) != nil)
            }
            // Nothing was written by any rejected request.
            #expect(try await db.client.query("SELECT count(*) FROM users").first?.decode(Int.self) == 0)
        }
    }

    @Test func adminRoutesNeedTheAdminToken() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                let missing = try await client.execute(uri: "/v1/users/dave", method: .put, headers: headers(nil))
                #expect(missing.status == .unauthorized)
                #expect(try errorCode(missing) == "unauthorized")
                let wrong = try await client.execute(uri: "/v1/users/dave", method: .put, headers: headers("not-the-token"))
                #expect(wrong.status == .unauthorized)
                var basic = headers(nil)
                basic[.authorization] = "Basic \(Self.adminToken)"
                #expect(try await client.execute(uri: "/v1/users/dave", method: .put, headers: basic).status == .unauthorized)
            }
            #expect(try await db.client.query("SELECT count(*) FROM users").first?.decode(Int.self) == 0)
        }
    }

    @Test func sessionsAreIssuedRecognisedRevokedAndExpire() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                let unknown = try await client.execute(uri: "/v1/users/erin/sessions", method: .post, headers: headers(Self.adminToken))
                #expect(unknown.status == .notFound)
                #expect(try errorCode(unknown) == "user_not_found")

                _ = try await client.execute(uri: "/v1/users/erin", method: .put, headers: headers(Self.adminToken))
                let issued = try await client.execute(uri: "/v1/users/erin/sessions", method: .post, headers: headers(Self.adminToken))
                #expect(issued.status == .created)
                let token = try #require(try json(issued)["token"] as? String)
                #expect(token.count >= 64)

                // Stored only as its hash.
                let stored = try await db.client.query("SELECT token_hash FROM sessions WHERE user_id = 'erin'")
                #expect(stored.count == 1)
                let hash = try #require(stored.first).decode(PostgresBytes.self)
                #expect(hash.bytes == SHA256.digest(Array(token.utf8)))
                // No column of the row holds the token or its secret half, in any form.
                let secretHalf = try #require(token.split(separator: ".").last).lowercased()
                let row = try await db.client.query("SELECT lower(to_jsonb(s)::text) FROM sessions s WHERE user_id = 'erin'")
                let text = try #require(row.first).decode(String.self)
                #expect(!text.contains(secretHalf))
                #expect(!text.contains(Hex.encode(Array(secretHalf.utf8))), "not even hex-encoded")

                // A valid user session on an admin route is forbidden, not unauthenticated.
                let asUser = try await client.execute(uri: "/v1/users/erin", method: .put, headers: headers(token))
                #expect(asUser.status == .forbidden)
                #expect(try errorCode(asUser) == "forbidden")

                let revoked = try await client.execute(uri: "/v1/users/erin/sessions", method: .delete, headers: headers(Self.adminToken))
                #expect(revoked.status == .ok)
                #expect(try json(revoked)["revoked"] as? Int == 1)
                #expect(try await client.execute(uri: "/v1/users/erin", method: .put, headers: headers(token)).status == .unauthorized)

                // An expired session is no longer recognised either.
                let short = try await client.execute(
                    uri: "/v1/users/erin/sessions",
                    method: .post,
                    headers: headers(Self.adminToken),
                    body: ByteBuffer(string: #"{"expires_in":60}"#)
                )
                let shortToken = try #require(try json(short)["token"] as? String)
                #expect(try await client.execute(uri: "/v1/users/erin", method: .put, headers: headers(shortToken)).status == .forbidden)
                try await db.client.query("UPDATE sessions SET expires_at = now() - interval '1 second' WHERE user_id = 'erin'")
                #expect(try await client.execute(uri: "/v1/users/erin", method: .put, headers: headers(shortToken)).status == .unauthorized)

                let badLifetime = try await client.execute(
                    uri: "/v1/users/erin/sessions",
                    method: .post,
                    headers: headers(Self.adminToken),
                    body: ByteBuffer(string: #"{"expires_in":5}"#)
                )
                #expect(badLifetime.status == .badRequest)
                #expect(try errorCode(badLifetime) == "invalid_expires_in")
            }
        }
    }
}

/// Values the database cannot hold are the client's error, answered as JSON 400s.
@Suite("Unstorable values")
struct UnstorableValueTests {
    @Test func nulCharactersAndCombiningMarksAreClientErrors() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await heraldApplication(db, adminToken: "nul-admin").test(.router) { client in
                let headers = jsonHeaders(bearer: "nul-admin")
                let nulNickname = try await client.execute(
                    uri: "/v1/users/zoe",
                    method: .put,
                    headers: headers,
                    body: ByteBuffer(string: #"{"nickname":"a\u0000b"}"#)
                )
                #expect(nulNickname.status == .badRequest)
                #expect(try errorCode(nulNickname) == "invalid_value")
                let nulCursor = try await client.execute(uri: "/v1/channels?after=%00", method: .get, headers: headers)
                #expect(nulCursor.status == .badRequest)
                // 100 letters each with a combining mark: 100 characters to Swift, 200 code points to
                // PostgreSQL, which is what the 128 limit counts.
                let id = String(repeating: "e\u{301}", count: 100).addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)!
                let marked = try await client.execute(uri: "/v1/users/\(id)", method: .put, headers: headers)
                #expect(marked.status == .badRequest)
                #expect(try errorCode(marked) == "invalid_user_id")
            }
            #expect(try await db.client.query("SELECT count(*) FROM users").first?.decode(Int.self) == 0)
        }
    }
}
