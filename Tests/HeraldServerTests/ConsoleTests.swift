import Foundation
import HTTPTypes
import HeraldConsole
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

/// The admin console over HTTP, against a real database: sign-in, the cookie, CSRF and origin checks,
/// and the channel pages. The browser drives the same pages in `ConsoleBrowserTests`.
@Suite("Console")
struct ConsoleTests {
    static let adminToken = "console-admin-token-0123456789abcdef"

    func application(_ db: TestDatabase, secrets: Bool = false) async throws -> some ApplicationProtocol {
        var dependencies = try heraldDependencies(
            db,
            adminToken: Self.adminToken,
            secrets: secrets ? try SecretBox(key: SecureRandom.bytes(32)) : nil
        )
        dependencies.console = try await ConsoleSite.load(ConsoleSettings(directory: TestPostgres.repositoryRoot() + "/console"))
        return Application(router: HeraldApplication.buildRouter(dependencies).router)
    }

    /// A signed-in browser, as far as these tests need one: its cookie and the CSRF token of its pages.
    struct SignedIn {
        var cookie: String
        var csrf: String

        var headers: HTTPFields {
            var fields = HTTPFields()
            fields[.cookie] = "\(ConsoleTests.cookieName)=\(cookie)"
            return fields
        }
    }

    static let cookieName = "herald_console"

    func signIn(_ client: some TestClientProtocol, headers: HTTPFields = [:]) async throws -> SignedIn {
        let response = try await post(client, "/console/sign-in", form: ["token": Self.adminToken], headers: headers)
        #expect(response.status == .seeOther)
        #expect(response.headers[.location] == "/console")
        let setCookie = try #require(response.headers[.setCookie])
        let cookie = try #require(Self.cookieValue(setCookie))
        let overview = try await client.execute(uri: "/console", method: .get, headers: SignedIn(cookie: cookie, csrf: "").headers)
        #expect(overview.status == .ok)
        let csrf = try #require(Self.csrfToken(String(buffer: overview.body)))
        return SignedIn(cookie: cookie, csrf: csrf)
    }

    func post(
        _ client: some TestClientProtocol,
        _ path: String,
        form: [String: String],
        headers: HTTPFields = [:]
    ) async throws -> TestResponse {
        var fields = headers
        fields[.contentType] = "application/x-www-form-urlencoded"
        let body = form.map { key, value in
            "\(key)=\(value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
        }.joined(separator: "&")
        return try await client.execute(uri: path, method: .post, headers: fields, body: ByteBuffer(string: body))
    }

    static func cookieValue(_ setCookie: String) -> String? {
        guard setCookie.hasPrefix(cookieName + "=") else { return nil }
        return setCookie.dropFirst(cookieName.count + 1).split(separator: ";").first.map(String.init)
    }

    static func csrfToken(_ html: String) -> String? {
        guard let range = html.range(of: #"name="csrf" value=""#) else { return nil }
        return html[range.upperBound...].split(separator: "\"").first.map(String.init)
    }

    @Test func signInSetsAStrictHttpOnlyCookieThatNamesAStoredSignIn() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                let away = try await client.execute(uri: "/console", method: .get)
                #expect(away.status == .seeOther)
                #expect(away.headers[.location] == "/console/sign-in")
                let page = try await client.execute(uri: "/console/sign-in", method: .get)
                #expect(page.status == .ok)
                #expect(page.headers[.contentSecurityPolicy]?.contains("script-src 'self'") == true)
                #expect(page.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
                #expect(page.headers[.init("X-Frame-Options")!] == "DENY")
                #expect(String(buffer: page.body).contains(#"<label for="token">Admin token</label>"#))

                let wrong = try await post(client, "/console/sign-in", form: ["token": "not-the-token"])
                #expect(wrong.status == .unauthorized)
                #expect(wrong.headers[.setCookie] == nil)
                #expect(String(buffer: wrong.body).contains("not this server"))

                let response = try await post(client, "/console/sign-in", form: ["token": Self.adminToken])
                let setCookie = try #require(response.headers[.setCookie])
                for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age=43"] {
                    #expect(setCookie.contains(attribute), "\(setCookie) lacks \(attribute)")
                }
                #expect(!setCookie.contains("Secure"))
                let cookie = try #require(Self.cookieValue(setCookie))
                #expect(cookie != Self.adminToken)
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
                let secure = try await post(client, "/console/sign-in", form: ["token": Self.adminToken], headers: proxied)
                #expect(secure.headers[.setCookie]?.contains("Secure") == true)
            }
        }
    }

    /// Sign-in shares the admin API's limit on failed authentications from one address: guessing the
    /// token through the console is as slow as through the API.
    @Test func failedSignInsCountAgainstTheAddressLimit() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            var settings = RequestLimits.Settings.off
            settings.failedAuthentication = RateLimit(perSecond: 0.001, burst: 2)
            settings.holdRefusals = .zero
            var dependencies = try heraldDependencies(db, adminToken: Self.adminToken)
            dependencies.limits = RequestLimits(settings)
            dependencies.console = try await ConsoleSite.load(ConsoleSettings(directory: TestPostgres.repositoryRoot() + "/console"))
            try await Application(router: HeraldApplication.buildRouter(dependencies).router).test(.live) { client in
                for _ in 0..<2 {
                    #expect(try await post(client, "/console/sign-in", form: ["token": "a-guess"]).status == .unauthorized)
                }
                let limited = try await post(client, "/console/sign-in", form: ["token": Self.adminToken])
                #expect(limited.status == .tooManyRequests)
                #expect(limited.headers[.retryAfter] != nil)
                #expect(limited.headers[.setCookie] == nil)
                // The API sees the same count.
                let api = try await client.execute(uri: "/v1/channels", method: .get, headers: jsonHeaders(bearer: Self.adminToken))
                #expect(api.status == .tooManyRequests)
            }
        }
    }

    @Test func everyPostNeedsTheSignInAndItsCSRFTokenFromThisOrigin() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                let browser = try await signIn(client)
                let form = ["url": "orders", "kind": "feed", "name": "Orders", "categories": "", "retention": ""]

                // No cookie: refused, whatever the form carries.
                let anonymous = try await post(client, "/console/channels/new", form: form.merging(["csrf": browser.csrf]) { $1 })
                #expect(anonymous.status == .forbidden)
                // The cookie without the token, or with another.
                let missing = try await post(client, "/console/channels/new", form: form, headers: browser.headers)
                #expect(missing.status == .badRequest)
                let wrong = try await post(
                    client,
                    "/console/channels/new",
                    form: form.merging(["csrf": String(repeating: "0", count: 64)]) { $1 },
                    headers: browser.headers
                )
                #expect(wrong.status == .forbidden)
                #expect(String(buffer: wrong.body).contains("did not come from this console"))
                // Another sign-in's token does not do either.
                let other = try await signIn(client)
                let crossed = try await post(
                    client,
                    "/console/channels/new",
                    form: form.merging(["csrf": other.csrf]) { $1 },
                    headers: browser.headers
                )
                #expect(crossed.status == .forbidden)
                // Everything right, but sent from another site's page.
                var foreign = browser.headers
                foreign[.origin] = "https://evil.example"
                let forged = try await post(client, "/console/channels/new", form: form.merging(["csrf": browser.csrf]) { $1 }, headers: foreign)
                #expect(forged.status == .forbidden)
                #expect(try await ChannelStore(client: db.client).get("orders") == nil)

                let created = try await post(
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
            try await application(db).test(.router) { client in
                let browser = try await signIn(client)
                let out = try await post(client, "/console/sign-out", form: ["csrf": browser.csrf], headers: browser.headers)
                #expect(out.status == .seeOther)
                #expect(out.headers[.location] == "/console/sign-in")
                #expect(out.headers[.setCookie]?.contains("Max-Age=0") == true)
                // The old cookie, replayed, no longer signs anyone in.
                let replayed = try await client.execute(uri: "/console/channels", method: .get, headers: browser.headers)
                #expect(replayed.status == .seeOther)
                #expect(replayed.headers[.location] == "/console/sign-in")

                // An expired sign-in is no sign-in either.
                let expiring = try await signIn(client)
                try await db.client.query("UPDATE console_sessions SET expires_at = now() - interval '1 second'")
                #expect(try await client.execute(uri: "/console", method: .get, headers: expiring.headers).status == .seeOther)
                #expect(try await ConsoleSessionStore(client: db.client).deleteExpired() == 1)
            }
        }
    }

    /// A sign-in is made with the admin token of its time: a server given a new one does not honour it.
    @Test func aNewAdminTokenEndsTheOldSignIns() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let browser = try await application(db).test(.router) { client in try await signIn(client) }
            var rotated = try heraldDependencies(db, adminToken: "another-admin-token-0123456789abcdef")
            rotated.console = try await ConsoleSite.load(ConsoleSettings(directory: TestPostgres.repositoryRoot() + "/console"))
            try await Application(router: HeraldApplication.buildRouter(rotated).router).test(.router) { client in
                let page = try await client.execute(uri: "/console", method: .get, headers: browser.headers)
                #expect(page.status == .seeOther)
                #expect(page.headers[.location] == "/console/sign-in")
                let form = try await post(
                    client,
                    "/console/channels/new",
                    form: ["csrf": browser.csrf, "url": "x", "kind": "feed"],
                    headers: browser.headers
                )
                #expect(form.status == .forbidden)
            }
            // The old token's server still knows it.
            try await application(db).test(.router) { client in
                let page = try await client.execute(uri: "/console", method: .get, headers: browser.headers)
                #expect(page.status == .ok)
            }
        }
    }

    @Test func channelsAreCreatedEditedAndDeletedThroughForms() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db).test(.router) { client in
                let browser = try await signIn(client)
                func save(_ path: String, _ fields: [String: String]) async throws -> TestResponse {
                    try await post(client, path, form: fields.merging(["csrf": browser.csrf]) { $1 }, headers: browser.headers)
                }
                let categories = "shipping | Shipping | default\nbilling | Billing"
                let created = try await save(
                    "/console/channels/new",
                    ["url": "orders", "kind": "feed", "name": "Orders", "categories": categories, "retention": "24h"]
                )
                #expect(created.status == .seeOther)
                let stored = try #require(try await ChannelStore(client: db.client).get("orders")).channel
                #expect(
                    stored.categories == [
                        .init(id: "shipping", name: "Shipping", isDefault: true), .init(id: "billing", name: "Billing", isDefault: false),
                    ]
                )
                #expect(stored.retention == "1d")

                // Problems come back on the form, with what was typed.
                let again = try await save("/console/channels/new", ["url": "orders", "kind": "feed"])
                #expect(again.status == .unprocessableContent)
                #expect(String(buffer: again.body).contains("exists already"))
                let badRetention = try await save("/console/channels/orders", ["kind": "feed", "name": "Renamed", "retention": "soon"])
                #expect(badRetention.status == .unprocessableContent)
                #expect(String(buffer: badRetention.body).contains(#"value="Renamed""#))
                let badCategories = try await save("/console/channels/orders", ["kind": "feed", "categories": "just-an-id"])
                #expect(badCategories.status == .unprocessableContent)
                #expect(String(buffer: badCategories.body).contains("Categories, line 1"))
                let kindChange = try await save("/console/channels/orders", ["kind": "chat"])
                #expect(kindChange.status == .unprocessableContent)
                #expect(String(buffer: kindChange.body).contains("its kind cannot change"))
                #expect(try await ChannelStore(client: db.client).get("orders")?.channel == stored)

                // Markup in a name is shown, not run.
                #expect(try await save("/console/channels/orders", ["kind": "feed", "name": "<script>alert(1)</script>"]).status == .seeOther)
                let list = String(buffer: try await client.execute(uri: "/console/channels", method: .get, headers: browser.headers).body)
                #expect(list.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
                #expect(!list.contains("<script>alert(1)"))

                // The confirmation says what goes with the channel.
                _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
                _ = try await UserStore(client: db.client).upsert(id: "u2", nickname: nil, profileURL: nil)
                _ = try await TemplateStore(client: db.client).put(.plain)
                let send = try await client.execute(
                    uri: "/v1/notifications",
                    method: .post,
                    headers: jsonHeaders(bearer: Self.adminToken),
                    body: ByteBuffer(string: #"{"channel_url":"orders","template_key":"plain","variables":{"title":"Hi"},"targets":["u1","u2"]}"#)
                )
                #expect(send.status == .created)
                let confirm = String(
                    buffer: try await client.execute(uri: "/console/channels/orders/delete", method: .get, headers: browser.headers).body
                )
                #expect(confirm.contains(#"<strong id="delete-notifications">1</strong>"#))
                #expect(confirm.contains(#"<strong id="delete-copies">2</strong>"#))
                let deleted = try await save("/console/channels/orders/delete", [:])
                #expect(deleted.status == .seeOther)
                #expect(deleted.headers[.location] == "/console/channels?deleted=orders")
                #expect(try await ChannelStore(client: db.client).get("orders") == nil)
                #expect(try await client.execute(uri: "/console/channels/orders", method: .get, headers: browser.headers).status == .notFound)
            }
        }
    }

    @Test func theOverviewCountsWhatIsThere() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
            _ = try await ChannelStore(client: db.client).put(Channel(url: "news", kind: .feed, name: "News"))
            _ = try await TemplateStore(client: db.client).put(.plain)
            try await application(db).test(.router) { client in
                let browser = try await signIn(client)
                for _ in 0..<3 {
                    let send = try await client.execute(
                        uri: "/v1/notifications",
                        method: .post,
                        headers: jsonHeaders(bearer: Self.adminToken),
                        body: ByteBuffer(string: #"{"channel_url":"news","template_key":"plain","variables":{"title":"Hi"},"targets":["u1"]}"#)
                    )
                    #expect(send.status == .created)
                }
                let html = String(buffer: try await client.execute(uri: "/console", method: .get, headers: browser.headers).body)
                #expect(html.contains(#"<dd id="users">1</dd>"#))
                #expect(html.contains(#"<dd id="channels">1</dd>"#))
                #expect(html.contains(#"<dd id="sends">3</dd>"#))
                // The chart's bar for this hour, with its value for screen readers.
                #expect(html.contains("<title>3 sends, 0 h ago</title>"))
            }
        }
    }

    @Test func withoutTheConsoleThereIsNoConsole() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let overview = try await client.execute(uri: "/console", method: .get)
                #expect(overview.status == .notFound)
                let signIn = try await client.execute(uri: "/console/sign-in", method: .get)
                #expect(signIn.status == .notFound)
            }
        }
    }
}
