import Foundation
import HeraldConsole
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Testing

/// The console's pages beyond sign-in and channels: each needs the sign-in, and each write goes
/// through the admin API's own code.
extension ConsoleTests {
    /// A `multipart/form-data` body of `fields` and one file field `file`.
    func multipart(_ fields: [String: String], file: [UInt8]?) -> (body: ByteBuffer, contentType: String) {
        let boundary = "herald-test-boundary-0123456789"
        var body = ByteBuffer()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            body.writeString("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n")
        }
        if let file {
            body.writeString("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"upload\"\r\n")
            body.writeString("Content-Type: application/octet-stream\r\n\r\n")
            body.writeBytes(file)
            body.writeString("\r\n")
        }
        body.writeString("--\(boundary)--\r\n")
        return (body, "multipart/form-data; boundary=\(boundary)")
    }

    func upload(
        _ client: some TestClientProtocol,
        _ path: String,
        _ fields: [String: String],
        file: [UInt8]?,
        headers: HTTPFields
    ) async throws -> TestResponse {
        let (body, contentType) = multipart(fields, file: file)
        var all = headers
        all[.contentType] = contentType
        return try await client.execute(uri: path, method: .post, headers: all, body: body)
    }

    @Test func everyPageAndFragmentNeedsTheSignIn() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await application(db, secrets: true).test(.router) { client in
                for path in [
                    "/console/templates", "/console/templates/plain", "/console/templates/plain/preview", "/console/send",
                    "/console/send/curl?template=plain", "/console/notifications", "/console/notifications/1", "/console/notifications/1/funnel",
                    "/console/users", "/console/users/alice", "/console/push",
                ] {
                    let response = try await client.execute(uri: path, method: .get)
                    #expect(response.status == .seeOther, "\(path)")
                    #expect(response.headers[.location] == "/console/sign-in", "\(path)")
                }
                // An upload with the cookie but another token, or without the cookie, changes nothing.
                let browser = try await signIn(client)
                let fields = ["name": "prod", "type": "token", "environment": "production", "topic": "com.example.app"]
                let forged = try await upload(
                    client,
                    "/console/push/credentials",
                    fields.merging(["csrf": "0"]) { $1 },
                    file: [1],
                    headers: browser.headers
                )
                #expect(forged.status == .forbidden)
                let anonymous = try await upload(
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

    @Test func thePreviewRendersSamplesAndSaysWhatIsWrong() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let template = Template(
                key: "shipped",
                name: "Shipped",
                variables: [.init(name: "order", type: .string, required: true), .init(name: "days", type: .number)],
                data: .object(["title": .string("Order {{order}} in {{days}} days")]),
                pushBody: "Order {{order}} is coming"
            )
            _ = try await TemplateStore(client: db.client).put(template)
            try await application(db).test(.router) { client in
                let browser = try await signIn(client)
                func preview(_ query: String) async throws -> String {
                    String(
                        buffer: try await client.execute(uri: "/console/templates/shipped/preview?\(query)", method: .get, headers: browser.headers)
                            .body
                    )
                }
                let missing = try await preview("")
                #expect(missing.contains("order is required"))
                #expect(!missing.contains("preview-data"))
                let page = String(buffer: try await client.execute(uri: "/console/templates/shipped", method: .get, headers: browser.headers).body)
                #expect(page.contains("order is required"))
                let rendered = try await preview("v_order=A-1&v_days=3")
                #expect(rendered.contains("Order A-1 in 3 days"))
                #expect(rendered.contains("Order A-1 is coming"))
                #expect(rendered.contains(#"of 4096 bytes"#))
                let wrongType = String(
                    buffer: try await client.execute(
                        uri: "/console/templates/shipped?v_order=A-1&v_days=soon",
                        method: .get,
                        headers: browser.headers
                    ).body
                )
                #expect(wrongType.contains("days must be a number"))
                #expect(wrongType.contains(#"aria-invalid="true""#))
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

    @Test func usersAreRevokedResetAndErasedFromTheirPage() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: "Una", profileURL: nil)
            let session = try #require(try await SessionStore(client: db.client).create(userID: "u1", lifetime: 3600)).token
            try await application(db).test(.router) { client in
                let browser = try await signIn(client)
                let page = String(buffer: try await client.execute(uri: "/console/users/u1", method: .get, headers: browser.headers).body)
                #expect(page.contains("Una"))
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
                let bad = try await upload(client, "/console/push/credentials", fields, file: Array("not a key".utf8), headers: browser.headers)
                #expect(bad.status == .unprocessableContent)
                #expect(String(buffer: bad.body).contains("key: "))
                let key = TestCredentials.shared.signingKeyPEM
                let good = try await upload(client, "/console/push/credentials", fields, file: Array(key.utf8), headers: browser.headers)
                #expect(good.status == .seeOther)
                let listed = String(buffer: try await client.execute(uri: "/console/push", method: .get, headers: browser.headers).body)
                #expect(listed.contains("com.example.app"))
                #expect(!listed.contains("PRIVATE KEY"))
                let deleted = try await post(client, "/console/push/credentials/prod/delete", form: ["csrf": browser.csrf], headers: browser.headers)
                #expect(deleted.status == .seeOther)
                #expect(try await db.client.query("SELECT count(*) FROM apns_credentials").first!.decode(Int64.self) == 0)

                let fixtures = #"{"channels":[{"channel_url":"f1","kind":"feed"}],"templates":[{"key":"t1","data":{"title":"{{nope}}"}}]}"#
                let refused = try await upload(
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
                let loaded = try await upload(
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
