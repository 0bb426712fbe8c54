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

/// The admin console wired to the admin API, over HTTP against a real database: sign-in shares the API's
/// limits, and the console's writes go through the API's own code (sends, erasure, credentials,
/// fixtures). The console's own rules are tested at its layer, in HeraldConsoleTests; the browser
/// drives the pages in `ConsoleBrowserTests`.
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

    func signIn(_ client: some TestClientProtocol) async throws -> ConsoleBrowser {
        try await ConsoleBrowser.signIn(client, token: Self.adminToken)
    }

    func post(_ client: some TestClientProtocol, _ path: String, form: [String: String], headers: HTTPFields = [:]) async throws -> TestResponse {
        try await ConsoleBrowser.post(client, path, form: form, headers: headers)
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

    @Test func aSendGoesThroughTheAPIAndItsCurlIsTheSameRequest() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
            _ = try await ChannelStore(client: db.client).put(Channel(url: "news", kind: .feed, name: "News"))
            _ = try await TemplateStore(client: db.client).put(.plain)
            try await application(db).test(.router) { client in
                let browser = try await signIn(client)
                let fields = ["template": "plain", "channel_url": "news", "audience": "targets", "targets": "u1", "v_title": "Hello"]
                let curl = String(
                    buffer: try await client.execute(
                        uri: "/console/send/curl?template=plain&channel_url=news&audience=targets&targets=u1&v_title=Hello",
                        method: .get,
                        headers: browser.headers
                    ).body
                )
                #expect(curl.contains(#"-d '{"channel_url":"news","targets":["u1"],"template_key":"plain","variables":{"title":"Hello"}}'"#))
                let sent = try await post(client, "/console/send", form: fields.merging(["csrf": browser.csrf]) { $1 }, headers: browser.headers)
                #expect(sent.status == .seeOther)
                let location = try #require(sent.headers[.location])
                let id = try #require(Int64(location.split(separator: "/").last ?? ""))
                let stored = try #require(try await NotificationStore(client: db.client).get(id))
                #expect(stored.variables == ["title": .string("Hello")])
                let funnel = String(
                    buffer: try await client.execute(uri: "/console/notifications/\(id)/funnel", method: .get, headers: browser.headers).body
                )
                #expect(funnel.contains(#"<span id="count-recipients">1</span>"#))

                // The API's refusal, in its words, on the form; nothing is sent.
                let refused = try await post(
                    client,
                    "/console/send",
                    form: fields.merging(["csrf": browser.csrf, "targets": "u1 ghost"]) { $1 },
                    headers: browser.headers
                )
                #expect(refused.status == .unprocessableContent)
                #expect(String(buffer: refused.body).contains("ghost"))
                let count = try await db.client.query("SELECT count(*) FROM notifications").first!.decode(Int64.self)
                #expect(count == 1)
            }
        }
    }

    /// A send with a batch key goes with its batch; the second folds into the first's digest, and the
    /// notification's page says so. A bad window is refused in the API's words.
    @Test func aBatchedSendFromTheFormFoldsIntoTheDigest() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
            _ = try await ChannelStore(client: db.client).put(Channel(url: "news", kind: .feed, name: "News"))
            _ = try await TemplateStore(client: db.client).put(.plain)
            try await application(db).test(.router) { client in
                let browser = try await signIn(client)
                let fields = [
                    "csrf": browser.csrf, "template": "plain", "channel_url": "news", "audience": "targets", "targets": "u1",
                    "v_title": "Liked", "batch_key": "likes:9", "batch_window": "10m", "batch_alert": "last",
                ]
                let curl = String(
                    buffer: try await client.execute(
                        uri:
                            "/console/send/curl?template=plain&channel_url=news&targets=u1&v_title=Hi&batch_key=likes:9&batch_window=10m&batch_alert=last",
                        method: .get,
                        headers: browser.headers
                    ).body
                )
                #expect(curl.contains(#""batch":{"alert":"last","key":"likes:9","window":"10m"}"#))
                var locations: [String] = []
                for _ in 0..<2 {
                    let sent = try await post(client, "/console/send", form: fields, headers: browser.headers)
                    #expect(sent.status == .seeOther)
                    locations.append(try #require(sent.headers[.location]))
                }
                let page = String(buffer: try await client.execute(uri: locations[1], method: .get, headers: browser.headers).body)
                #expect(page.contains("<code>likes:9</code>") && page.contains(#"<span id="batch-folded">1</span>"#))
                #expect(try await db.client.query("SELECT count(*) FROM notification_recipients")[0].decode(Int64.self) == 1)

                let refused = try await post(client, "/console/send", form: fields.merging(["batch_window": "2d"]) { $1 }, headers: browser.headers)
                #expect(refused.status == .unprocessableContent && String(buffer: refused.body).contains("batch.window"))
            }
        }
    }

    /// A send that says when is scheduled through the API, listed with its time, and cancelled from
    /// its row; a time in the past is refused in the API's words.
    @Test func aSendWithATimeIsScheduledListedAndCancelled() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
            _ = try await ChannelStore(client: db.client).put(Channel(url: "news", kind: .feed, name: "News"))
            _ = try await TemplateStore(client: db.client).put(.plain)
            try await application(db).test(.router) { client in
                let browser = try await signIn(client)
                let day = LocalDateTime(Date() + 3 * 86_400, in: TimeZone(identifier: "UTC")!)
                // As a browser's datetime-local field sends it: no seconds.
                let nine = String(LocalDateTime(year: day.year, month: day.month, day: day.day, hour: 9, minute: 0).description.dropLast(3))
                let fields = [
                    "csrf": browser.csrf, "template": "plain", "channel_url": "news", "audience": "targets", "targets": "u1",
                    "v_title": "Morning", "deliver_at_local": nine, "repeat": "daily",
                ]
                let curl = String(
                    buffer: try await client.execute(
                        uri: "/console/send/curl?template=plain&channel_url=news&targets=u1&v_title=Hi&deliver_at_local=\(nine)",
                        method: .get,
                        headers: browser.headers
                    ).body
                )
                #expect(curl.contains("/v1/scheduled-sends") && curl.contains(#""deliver_at_local":"\#(nine)""#))
                let scheduled = try await post(client, "/console/send", form: fields, headers: browser.headers)
                #expect(scheduled.status == .seeOther && scheduled.headers[.location] == "/console/scheduled?notice=Scheduled")
                let stored = try #require(try await ScheduleStore(client: db.client).list(state: .scheduled, after: nil, limit: 10).first)
                #expect(stored.timing == .local(LocalDateTime(nine)!) && stored.repeats == .daily)
                #expect(try await db.client.query("SELECT count(*) FROM notifications")[0].decode(Int64.self) == 0)

                let list = String(buffer: try await client.execute(uri: "/console/scheduled", method: .get, headers: browser.headers).body)
                #expect(list.contains(#"<tr id="schedule-\#(stored.id)">"#) && list.contains("in each recipient&#39;s zone, daily"))
                #expect(list.contains(#"action="/console/scheduled/\#(stored.id)/cancel""#))

                let past = try await post(
                    client,
                    "/console/send",
                    form: fields.merging(["deliver_at_local": "", "send_at": "2020-01-01T09:00:00Z"]) { $1 },
                    headers: browser.headers
                )
                #expect(past.status == .unprocessableContent && String(buffer: past.body).contains("has passed"))

                let cancel = try await post(client, "/console/scheduled/\(stored.id)/cancel", form: ["csrf": browser.csrf], headers: browser.headers)
                #expect(cancel.status == .seeOther)
                #expect(try await ScheduleStore(client: db.client).get(stored.id)?.state == .canceled)
                let canceled = String(
                    buffer: try await client.execute(uri: "/console/scheduled?state=canceled", method: .get, headers: browser.headers).body
                )
                #expect(canceled.contains(#"<tr id="schedule-\#(stored.id)">"#) && !canceled.contains("/cancel\""))
                // Cancelling again is the API's conflict, said on the page.
                let again = try await post(client, "/console/scheduled/\(stored.id)/cancel", form: ["csrf": browser.csrf], headers: browser.headers)
                #expect(again.status == .unprocessableContent && String(buffer: again.body).contains("nothing is left to cancel"))
            }
        }
    }

    /// Topics from the console: made, given subscribers and losing some through the API's own code
    /// (an unknown user refuses the whole change, in the API's words), and sent to from the send form.
    @Test func topicsAreMadeSubscribedAndSentTo() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            for user in ["u1", "u2", "u3"] { _ = try await UserStore(client: db.client).upsert(id: user, nickname: nil, profileURL: nil) }
            _ = try await ChannelStore(client: db.client).put(Channel(url: "news", kind: .feed, name: "News"))
            _ = try await TemplateStore(client: db.client).put(.plain)
            let topics = TopicStore(client: db.client)
            try await application(db).test(.router) { client in
                let browser = try await signIn(client)
                let created = try await post(
                    client,
                    "/console/topics",
                    form: ["csrf": browser.csrf, "id": "order:A-1", "name": "Order A-1"],
                    headers: browser.headers
                )
                #expect(created.status == .seeOther)
                #expect(try await topics.get("order:A-1")?.topic.name == "Order A-1")
                let bad = try await post(client, "/console/topics", form: ["csrf": browser.csrf, "id": "no spaces"], headers: browser.headers)
                #expect(bad.status == .unprocessableContent)
                #expect(String(buffer: bad.body).contains("the topic id may hold only"))

                let added = try await post(
                    client,
                    "/console/topics/order:A-1/subscribers/add",
                    form: ["csrf": browser.csrf, "user_ids": "u1, u2\nu3"],
                    headers: browser.headers
                )
                #expect(added.headers[.location] == "/console/topics/order:A-1?notice=3+added")
                let refused = try await post(
                    client,
                    "/console/topics/order:A-1/subscribers/remove",
                    form: ["csrf": browser.csrf, "user_ids": ""],
                    headers: browser.headers
                )
                #expect(refused.status == .unprocessableContent)
                let unknown = try await post(
                    client,
                    "/console/topics/order:A-1/subscribers/add",
                    form: ["csrf": browser.csrf, "user_ids": "u1 ghost"],
                    headers: browser.headers
                )
                #expect(unknown.status == .unprocessableContent && String(buffer: unknown.body).contains("ghost"))
                let removed = try await post(
                    client,
                    "/console/topics/order:A-1/subscribers/remove",
                    form: ["csrf": browser.csrf, "user_ids": "u3"],
                    headers: browser.headers
                )
                #expect(removed.headers[.location] == "/console/topics/order:A-1?notice=1+removed")
                let page = String(buffer: try await client.execute(uri: "/console/topics/order:A-1", method: .get, headers: browser.headers).body)
                #expect(page.contains("2 subscribers") && page.contains(#"href="/console/users/u1""#) && !page.contains(#"href="/console/users/u3""#))
                let list = String(buffer: try await client.execute(uri: "/console/topics", method: .get, headers: browser.headers).body)
                #expect(list.contains(#"<a href="/console/topics/order:A-1">order:A-1</a>"#))

                let fields = [
                    "csrf": browser.csrf, "template": "plain", "channel_url": "news", "audience": "topic", "topic": "order:A-1", "v_title": "Hi",
                ]
                let sent = try await post(client, "/console/send", form: fields, headers: browser.headers)
                #expect(sent.status == .seeOther)
                let location = try #require(sent.headers[.location])
                let id = try #require(Int64(location.split(separator: "/").last ?? ""))
                let stored = try #require(try await NotificationStore(client: db.client).get(id))
                #expect(stored.audience == "topic" && stored.topic == "order:A-1" && stored.audienceSize == 2)
            }
        }
    }

    @Test func usersAreRevokedResetAndErasedFromTheirPage() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(
                id: "u1",
                UserChange(nickname: "Una", locale: "fr-CA", timeZone: "America/Toronto", properties: ["plan": .string("pro")])
            )
            let session = try #require(try await SessionStore(client: db.client).create(userID: "u1", lifetime: 3600)).token
            try await application(db).test(.router) { client in
                let browser = try await signIn(client)
                let page = String(buffer: try await client.execute(uri: "/console/users/u1", method: .get, headers: browser.headers).body)
                #expect(page.contains("Una"))
                // The profile: locale, time zone and the custom properties.
                #expect(page.contains("locale fr-CA") && page.contains("time zone America/Toronto"))
                #expect(page.contains("&quot;plan&quot;") && page.contains("pro"), "\(page)")
                #expect(page.contains("Revoke every session"))
                let missing = try await client.execute(uri: "/console/users/nobody", method: .get, headers: browser.headers)
                #expect(missing.status == .notFound)

                let revoked = try await post(client, "/console/users/u1/sessions/revoke", form: ["csrf": browser.csrf], headers: browser.headers)
                #expect(revoked.headers[.location] == "/console/users/u1?notice=1+sessions+revoked")
                #expect(try await SessionStore(client: db.client).isValid(session) == false)

                let unconfirmed = try await post(
                    client,
                    "/console/users/u1/erase",
                    form: ["csrf": browser.csrf, "confirm": "u2"],
                    headers: browser.headers
                )
                #expect(unconfirmed.status == .unprocessableContent)
                #expect(try await UserErasureStore(client: db.client).status(userID: "u1") == nil)
                let erased = try await post(
                    client,
                    "/console/users/u1/erase",
                    form: ["csrf": browser.csrf, "confirm": "u1"],
                    headers: browser.headers
                )
                #expect(erased.status == .seeOther)
                #expect(try await UserErasureStore(client: db.client).status(userID: "u1") != nil)
                #expect(try await UserStore(client: db.client).key("u1") == nil)
            }
        }
    }

    @Test func credentialsAndFixturesAreCheckedAsTheAPIAndCLICheckThem() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db, secrets: true).test(.router) { client in
                let browser = try await signIn(client)
                let fields = [
                    "csrf": browser.csrf, "name": "prod", "type": "token", "environment": "production", "topic": "com.example.app",
                    "key_id": "ABCDE12345", "team_id": "TEAM123456",
                ]
                let bad = try await ConsoleBrowser.upload(
                    client,
                    "/console/push/credentials",
                    fields,
                    file: Array("not a key".utf8),
                    headers: browser.headers
                )
                #expect(bad.status == .unprocessableContent)
                #expect(String(buffer: bad.body).contains("key: "))
                let key = TestCredentials.shared.signingKeyPEM
                let good = try await ConsoleBrowser.upload(
                    client,
                    "/console/push/credentials",
                    fields,
                    file: Array(key.utf8),
                    headers: browser.headers
                )
                #expect(good.status == .seeOther)
                let listed = String(buffer: try await client.execute(uri: "/console/push", method: .get, headers: browser.headers).body)
                #expect(listed.contains("com.example.app"))
                #expect(!listed.contains("PRIVATE KEY"))
                let deleted = try await post(client, "/console/push/credentials/prod/delete", form: ["csrf": browser.csrf], headers: browser.headers)
                #expect(deleted.status == .seeOther)
                #expect(try await db.client.query("SELECT count(*) FROM apns_credentials").first!.decode(Int64.self) == 0)

                let fixtures = #"{"channels":[{"channel_url":"f1","kind":"feed"}],"templates":[{"key":"t1","data":{"title":"{{nope}}"}}]}"#
                let refused = try await ConsoleBrowser.upload(
                    client,
                    "/console/templates/fixtures",
                    ["csrf": browser.csrf],
                    file: Array(fixtures.utf8),
                    headers: browser.headers
                )
                #expect(refused.status == .unprocessableContent)
                #expect(String(buffer: refused.body).contains("$.templates[0].data.title"))
                #expect(try await ChannelStore(client: db.client).get("f1") == nil)
                let fine = #"{"channels":[{"channel_url":"f1","kind":"feed"}]}"#
                let loaded = try await ConsoleBrowser.upload(
                    client,
                    "/console/templates/fixtures",
                    ["csrf": browser.csrf],
                    file: Array(fine.utf8),
                    headers: browser.headers
                )
                #expect(String(buffer: loaded.body).contains("channel f1: created"))
                #expect(try await ChannelStore(client: db.client).get("f1") != nil)
            }
        }
    }
}
