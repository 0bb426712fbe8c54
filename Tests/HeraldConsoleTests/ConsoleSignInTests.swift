import Foundation
import HTTPTypes
import HeraldConsole
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Testing

/// Signing in to the console and what a sign-in guards: the cookie and what is stored of it, the CSRF
/// token and origin every post needs, signing out, expiry, and a new admin token ending old sign-ins.
@Suite("Console sign-in")
struct ConsoleSignInTests {
    @Test func signInSetsAStrictHttpOnlyCookieThatNamesAStoredSignIn() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await ConsoleHarness.application(db).test(.router) { client in
                let away = try await client.execute(uri: "/console", method: .get)
                #expect(away.status == .seeOther)
                #expect(away.headers[.location] == "/console/sign-in")
                let page = try await client.execute(uri: "/console/sign-in", method: .get)
                #expect(page.status == .ok)
                #expect(page.headers[.contentSecurityPolicy]?.contains("script-src 'self'") == true)
                #expect(page.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
                #expect(page.headers[.init("X-Frame-Options")!] == "DENY")
                #expect(String(buffer: page.body).contains(#"<label for="token">Admin token</label>"#))

                let wrong = try await ConsoleBrowser.post(client, "/console/sign-in", form: ["token": "not-the-token"])
                #expect(wrong.status == .unauthorized)
                #expect(wrong.headers[.setCookie] == nil)
                #expect(String(buffer: wrong.body).contains("not this server"))

                let response = try await ConsoleBrowser.post(client, "/console/sign-in", form: ["token": ConsoleHarness.adminToken])
                let setCookie = try #require(response.headers[.setCookie])
                for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age=43"] {
                    #expect(setCookie.contains(attribute), "\(setCookie) lacks \(attribute)")
                }
                #expect(!setCookie.contains("Secure"))
                let cookie = try #require(ConsoleBrowser.cookieValue(setCookie))
                #expect(cookie != ConsoleHarness.adminToken)
                // Only the token's hash is stored.
                let stored = try await db.client.query(
                    "SELECT count(*) FROM console_sessions WHERE token_hash = sha256(convert_to(\(cookie), 'UTF8'))"
                ).first!.decode(Int64.self)
                #expect(stored == 1)
                let plain = try await db.client.query("SELECT count(*) FROM console_sessions WHERE csrf_token = \(cookie)").first!.decode(Int64.self)
                #expect(plain == 0)

                // Behind a TLS-terminating proxy the cookie is Secure.
                var proxied = HTTPFields()
                proxied[.init("X-Forwarded-Proto")!] = "https"
                let secure = try await ConsoleBrowser.post(client, "/console/sign-in", form: ["token": ConsoleHarness.adminToken], headers: proxied)
                #expect(secure.headers[.setCookie]?.contains("Secure") == true)
            }
        }
    }

    @Test func everyPostNeedsTheSignInAndItsCSRFTokenFromThisOrigin() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await ConsoleHarness.application(db).test(.router) { client in
                let browser = try await ConsoleBrowser.signIn(client, token: ConsoleHarness.adminToken)
                let form = ["url": "orders", "kind": "feed", "name": "Orders", "categories": "", "retention": ""]

                // No cookie: refused, whatever the form carries.
                let anonymous = try await ConsoleBrowser.post(client, "/console/channels/new", form: form.merging(["csrf": browser.csrf]) { $1 })
                #expect(anonymous.status == .forbidden)
                // The cookie without the token, or with another.
                let missing = try await ConsoleBrowser.post(client, "/console/channels/new", form: form, headers: browser.headers)
                #expect(missing.status == .badRequest)
                let wrong = try await ConsoleBrowser.post(
                    client,
                    "/console/channels/new",
                    form: form.merging(["csrf": String(repeating: "0", count: 64)]) { $1 },
                    headers: browser.headers
                )
                #expect(wrong.status == .forbidden)
                #expect(String(buffer: wrong.body).contains("did not come from this console"))
                // Another sign-in's token does not do either.
                let other = try await ConsoleBrowser.signIn(client, token: ConsoleHarness.adminToken)
                let crossed = try await ConsoleBrowser.post(
                    client,
                    "/console/channels/new",
                    form: form.merging(["csrf": other.csrf]) { $1 },
                    headers: browser.headers
                )
                #expect(crossed.status == .forbidden)
                // Everything right, but sent from another site's page.
                var foreign = browser.headers
                foreign[.origin] = "https://evil.example"
                let forged = try await ConsoleBrowser.post(
                    client,
                    "/console/channels/new",
                    form: form.merging(["csrf": browser.csrf]) { $1 },
                    headers: foreign
                )
                #expect(forged.status == .forbidden)
                #expect(try await ChannelStore(client: db.client).get("orders") == nil)

                let created = try await ConsoleBrowser.post(
                    client,
                    "/console/channels/new",
                    form: form.merging(["csrf": browser.csrf]) { $1 },
                    headers: browser.headers
                )
                #expect(created.status == .seeOther)
                #expect(try await ChannelStore(client: db.client).get("orders")?.channel.name == "Orders")
            }
        }
    }

    @Test func signOutEndsTheSignInOnTheServer() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await ConsoleHarness.application(db).test(.router) { client in
                let browser = try await ConsoleBrowser.signIn(client, token: ConsoleHarness.adminToken)
                let out = try await ConsoleBrowser.post(client, "/console/sign-out", form: ["csrf": browser.csrf], headers: browser.headers)
                #expect(out.status == .seeOther)
                #expect(out.headers[.location] == "/console/sign-in")
                #expect(out.headers[.setCookie]?.contains("Max-Age=0") == true)
                // The old cookie, replayed, no longer signs anyone in.
                let replayed = try await client.execute(uri: "/console/channels", method: .get, headers: browser.headers)
                #expect(replayed.status == .seeOther)
                #expect(replayed.headers[.location] == "/console/sign-in")

                // An expired sign-in is no sign-in either.
                let expiring = try await ConsoleBrowser.signIn(client, token: ConsoleHarness.adminToken)
                try await db.client.query("UPDATE console_sessions SET expires_at = now() - interval '1 second'")
                #expect(try await client.execute(uri: "/console", method: .get, headers: expiring.headers).status == .seeOther)
                #expect(try await ConsoleSessionStore(client: db.client).deleteExpired() == 1)
            }
        }
    }

    /// A sign-in is made with the admin token of its time: a server given a new one does not honour it.
    @Test func aNewAdminTokenEndsTheOldSignIns() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let browser = try await ConsoleHarness.application(db).test(.router) { client in
                try await ConsoleBrowser.signIn(client, token: ConsoleHarness.adminToken)
            }
            try await ConsoleHarness.application(db, adminToken: "another-admin-token-0123456789abcdef").test(.router) { client in
                let page = try await client.execute(uri: "/console", method: .get, headers: browser.headers)
                #expect(page.status == .seeOther)
                #expect(page.headers[.location] == "/console/sign-in")
                let form = try await ConsoleBrowser.post(
                    client,
                    "/console/channels/new",
                    form: ["csrf": browser.csrf, "url": "x", "kind": "feed"],
                    headers: browser.headers
                )
                #expect(form.status == .forbidden)
            }
            // The old token's server still knows it.
            try await ConsoleHarness.application(db).test(.router) { client in
                let page = try await client.execute(uri: "/console", method: .get, headers: browser.headers)
                #expect(page.status == .ok)
            }
        }
    }

    @Test func everyPageAndFragmentNeedsTheSignIn() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await ConsoleHarness.application(db).test(.router) { client in
                for path in [
                    "/console/templates", "/console/templates/plain", "/console/templates/plain/preview", "/console/send",
                    "/console/send/curl?template=plain", "/console/notifications", "/console/notifications/1", "/console/notifications/1/funnel",
                    "/console/users", "/console/users/alice", "/console/push", "/console/scheduled",
                ] {
                    let response = try await client.execute(uri: path, method: .get)
                    #expect(response.status == .seeOther, "\(path)")
                    #expect(response.headers[.location] == "/console/sign-in", "\(path)")
                }
                // An upload with the cookie but another token, or without the cookie, changes nothing.
                let browser = try await ConsoleBrowser.signIn(client, token: ConsoleHarness.adminToken)
                let fields = ["name": "prod", "type": "token", "environment": "production", "topic": "com.example.app"]
                let forged = try await ConsoleBrowser.upload(
                    client,
                    "/console/push/credentials",
                    fields.merging(["csrf": "0"]) { $1 },
                    file: [1],
                    headers: browser.headers
                )
                #expect(forged.status == .forbidden)
                let anonymous = try await ConsoleBrowser.upload(
                    client,
                    "/console/push/credentials",
                    fields.merging(["csrf": browser.csrf]) { $1 },
                    file: [1],
                    headers: [:]
                )
                #expect(anonymous.status == .forbidden)
                let stored = try await db.client.query("SELECT count(*) FROM apns_credentials").first!.decode(Int64.self)
                #expect(stored == 0)
            }
        }
    }
}
