import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// CORS (`HERALD_CORS_ORIGINS`): pages on the listed origins may call the user routes, the stream and
/// the VAPID key; admin routes never; a page on any other origin is refused before anything runs.
@Suite("Cross-origin requests")
struct CrossOriginTests {
    static let adminToken = "test-admin-token-cross-origin-0123"
    static let app = "https://app.example.com"
    static let other = "https://evil.example.net"

    @Test func originsAreParsedExactlyAndWildcardsRefused() throws {
        let policy = try CrossOriginPolicy(
            parsing: " https://App.Example.com:443, http://localhost:5173 ,https://x.example.org:8443,capacitor://localhost"
        )
        #expect(policy.origins == ["https://app.example.com", "http://localhost:5173", "https://x.example.org:8443", "capacitor://localhost"])
        #expect(try CrossOriginPolicy(parsing: "").origins.isEmpty)
        for bad in [
            "*", "https://*.example.com", "app.example.com", "https://app.example.com/", "https://app.example.com/path",
            "https://user@app.example.com", "https://app.example.com?x=1", "null",
        ] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try CrossOriginPolicy(parsing: "https://ok.example.com,\(bad)") }
        }
    }

    /// A feed channel, users u1 and u2 with sessions, one notification to u1; the router with `app`
    /// listed; returns the sessions.
    func withApplication(_ body: @escaping @Sendable (any TestClientProtocol, TestDatabase, [String: String]) async throws -> Void) async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await ChannelStore(client: db.client).put(Channel(url: "feed", kind: .feed, name: "Feed"))
            _ = try await TemplateStore(client: db.client).put(.plain)
            var sessions: [String: String] = [:]
            for user in ["u1", "u2"] {
                _ = try await UserStore(client: db.client).upsert(id: user, nickname: nil, profileURL: nil)
                sessions[user] = try #require(try await SessionStore(client: db.client).create(userID: user, lifetime: 3600)).token.text
            }
            try await sendThroughStore(db, "hello", to: ["u1"])
            var dependencies = try heraldDependencies(db, adminToken: Self.adminToken)
            dependencies.crossOrigin = try CrossOriginPolicy(parsing: Self.app)
            let made = sessions
            try await Application(router: HeraldApplication.buildRouter(dependencies).router).test(.router) { client in
                try await body(client, db, made)
            }
        }
    }

    func headers(origin: String?, bearer: String? = nil, _ more: [HTTPField.Name: String] = [:]) -> HTTPFields {
        var fields = jsonHeaders(bearer: bearer)
        if let origin { fields[.origin] = origin }
        for (name, value) in more { fields[name] = value }
        return fields
    }

    @Test func aListedOriginsPreflightGetsThePathsMethodsAndItsRequestsTheHeaders() async throws {
        try await withApplication { client, _, sessions in
            let preflight = try await client.execute(
                uri: "/v1/me/channels/feed/read",
                method: .options,
                headers: headers(origin: Self.app, [.accessControlRequestMethod: "POST", .accessControlRequestHeaders: "authorization"])
            )
            #expect(preflight.status == .noContent)
            #expect(preflight.headers[.accessControlAllowOrigin] == Self.app)
            #expect(preflight.headers[.accessControlAllowMethods] == "POST")
            #expect(preflight.headers[.accessControlAllowHeaders] == "Authorization, Content-Type, Idempotency-Key, Herald-Device")
            #expect(preflight.headers[.accessControlMaxAge] == "7200")
            #expect(preflight.headers[values: .vary].contains("Origin"))
            // A path with several methods lists them all.
            let devices = try await client.execute(
                uri: "/v1/me/devices",
                method: .options,
                headers: headers(origin: Self.app, [.accessControlRequestMethod: "POST"])
            )
            #expect(devices.headers[.accessControlAllowMethods] == "DELETE, GET, POST")

            let unread = try await client.execute(uri: "/v1/me/unread", method: .get, headers: headers(origin: Self.app, bearer: sessions["u1"]))
            #expect(unread.status == .ok)
            #expect(unread.headers[.accessControlAllowOrigin] == Self.app)
            #expect(unread.headers[.accessControlExposeHeaders] == "Retry-After, Idempotent-Replayed")
            #expect(try jsonObject(unread)["total"] as? Int == 1)
            // An error is readable by the page too.
            let refused = try await client.execute(uri: "/v1/me/unread", method: .get, headers: headers(origin: Self.app, bearer: "not-a-session"))
            #expect(refused.status == .unauthorized)
            #expect(refused.headers[.accessControlAllowOrigin] == Self.app)
            #expect(try errorCode(refused) == "unauthorized")
            // The VAPID key is for pages; replacing it is not.
            let key = try await client.execute(
                uri: "/v1/webpush/key",
                method: .options,
                headers: headers(origin: Self.app, [.accessControlRequestMethod: "PUT"])
            )
            #expect(key.headers[.accessControlAllowMethods] == "GET")
        }
    }

    @Test func anUnlistedOriginIsRefusedAndChangesNothing() async throws {
        try await withApplication { client, _, sessions in
            let preflight = try await client.execute(
                uri: "/v1/me/channels/feed/read",
                method: .options,
                headers: headers(origin: Self.other, [.accessControlRequestMethod: "POST"])
            )
            #expect(preflight.status == .forbidden)
            #expect(preflight.headers[.accessControlAllowOrigin] == nil)
            #expect(try errorCode(preflight) == "origin_not_allowed")
            // A request the browser sends without asking first (a simple one) is refused before it runs.
            let read = try await client.execute(
                uri: "/v1/me/channels/feed/read",
                method: .post,
                headers: headers(origin: Self.other, bearer: sessions["u1"]),
                body: ByteBuffer(string: "{}")
            )
            #expect(read.status == .forbidden)
            #expect(read.headers[.accessControlAllowOrigin] == nil)
            let unread = try await client.execute(uri: "/v1/me/unread", method: .get, headers: headers(origin: nil, bearer: sessions["u1"]))
            #expect(try jsonObject(unread)["total"] as? Int == 1, "the refused read changed nothing")
            // "null" (a sandboxed page, a file) is not an origin that can be listed.
            let null = try await client.execute(uri: "/v1/me/unread", method: .get, headers: headers(origin: "null", bearer: sessions["u1"]))
            #expect(null.status == .forbidden)
        }
    }

    @Test func sameOriginAndNonBrowserRequestsGoOnWithoutCORSHeaders() async throws {
        try await withApplication { client, _, sessions in
            // The test client's requests go to `localhost`: a page there is on Herald's own origin.
            let own = try await client.execute(
                uri: "/v1/me/unread",
                method: .get,
                headers: headers(origin: "http://localhost", bearer: sessions["u1"])
            )
            #expect(own.status == .ok)
            #expect(own.headers[.accessControlAllowOrigin] == nil)
            // Only a web page's scheme names Herald's own origin: a hybrid app's view on the same host
            // is another origin, and must be listed.
            let hybrid = try await client.execute(
                uri: "/v1/me/unread",
                method: .get,
                headers: headers(origin: "capacitor://localhost", bearer: sessions["u1"])
            )
            #expect(hybrid.status == .forbidden)
            let app = try await client.execute(uri: "/v1/me/unread", method: .get, headers: headers(origin: nil, bearer: sessions["u2"]))
            #expect(app.status == .ok)
            #expect(app.headers[.accessControlAllowOrigin] == nil)
            // Native WebSocket libraries send the socket's own URL as the origin: no page's.
            let native = try await client.execute(
                uri: "/v1/me/unread",
                method: .get,
                headers: headers(origin: "ws://localhost", bearer: sessions["u2"])
            )
            #expect(native.status == .ok)
            #expect(native.headers[.accessControlAllowOrigin] == nil)
        }
    }

    @Test func adminRoutesAreNeverCrossOrigin() async throws {
        try await withApplication { client, _, _ in
            let failures = try await client.execute(
                uri: "/v1/push/failures",
                method: .get,
                headers: headers(origin: Self.app, bearer: Self.adminToken)
            )
            #expect(failures.status == .ok)
            #expect(failures.headers[.accessControlAllowOrigin] == nil)
            let preflight = try await client.execute(
                uri: "/v1/notifications",
                method: .options,
                headers: headers(origin: Self.app, [.accessControlRequestMethod: "POST"])
            )
            #expect(preflight.status == .methodNotAllowed)
            #expect(preflight.headers[.accessControlAllowOrigin] == nil)
            let put = try await client.execute(
                uri: "/v1/webpush/key",
                method: .put,
                headers: headers(origin: Self.app, bearer: "not-the-admin-token"),
                body: ByteBuffer(string: "x")
            )
            #expect(put.status == .unauthorized)
            #expect(put.headers[.accessControlAllowOrigin] == nil)
        }
    }
}
