import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Testing

/// Users an admin can read: one user, a page of them filtered by a property, their profile (locale,
/// time zone, custom properties) and templates that read it per recipient.
@Suite("Users")
struct UsersTests {
    let collections = CollectionTests()
    let routes = TopicsTests()
    var admin: HTTPFields { routes.admin }

    /// A template that greets its recipient by their profile.
    static let greeting = Template(
        key: "greeting",
        name: "Greeting",
        variables: [.init(name: "title", type: .string, required: true)],
        data: .object([
            "title": .string("{{title}} for {{user.properties.first_name}}"),
            "who": .string("{{user.nickname}}/{{user.id}}/{{user.locale}}{{#user.properties.vip}} (vip){{/user.properties.vip}}"),
        ]),
        pushTitle: "Hi {{user.nickname}}"
    )

    @Test func anAdminSetsAndReadsAUsersProfile() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await collections.app(db).test(.router) { client in
                let created = try await routes.call(
                    client,
                    .put,
                    "/v1/users/ada",
                    admin,
                    #"{"nickname":"Ada","locale":"en-GB","time_zone":"Europe/London","properties":{"plan":"pro","seats":3,"team":{"id":7}}}"#,
                    expect: .created
                )
                #expect(created["locale"] as? String == "en-GB" && created["time_zone"] as? String == "Europe/London")
                #expect((created["properties"] as? [String: Any])?["plan"] as? String == "pro")

                // Properties merge at the top level: given keys replace, null removes, others stay.
                let merged = try await routes.call(
                    client,
                    .put,
                    "/v1/users/ada",
                    admin,
                    #"{"properties":{"plan":"team","seats":null,"vip":true},"locale":null}"#,
                    expect: .ok
                )
                let properties = try #require(merged["properties"] as? [String: Any])
                #expect(properties["plan"] as? String == "team" && properties["vip"] as? Bool == true)
                #expect(properties["seats"] == nil && (properties["team"] as? [String: Any])?["id"] as? Int == 7)
                #expect(merged["locale"] is NSNull && merged["nickname"] as? String == "Ada")

                let read = try await routes.call(client, .get, "/v1/users/ada", admin, expect: .ok)
                #expect(read["user_id"] as? String == "ada" && read["time_zone"] as? String == "Europe/London")
                let stored = try #require(read["properties"] as? [String: Any])
                #expect(stored.keys.sorted() == ["plan", "team", "vip"] && stored["plan"] as? String == "team" && stored["vip"] as? Bool == true)
                try await routes.expectError(client, .get, "/v1/users/nobody", admin, status: .notFound, code: "user_not_found")

                // The time zone has one home: push preferences read and write the user's.
                _ = try await routes.call(client, .put, "/v1/users/ada", admin, #"{"time_zone":"Asia/Tokyo"}"#, expect: .ok)
                let session = try #require(try await SessionStore(client: db.client).create(userID: "ada", lifetime: 3600)).token.text
                let own = jsonHeaders(bearer: session)
                let preferences = try await routes.call(client, .get, "/v1/me/push-preferences", own, expect: .ok)
                #expect(preferences["timezone"] as? String == "Asia/Tokyo")
                _ = try await routes.call(client, .put, "/v1/me/push-preferences", own, #"{"timezone":"America/Denver"}"#, expect: .ok)
                #expect(try await routes.call(client, .get, "/v1/users/ada", admin, expect: .ok)["time_zone"] as? String == "America/Denver")
                // Resetting push preferences leaves the user's time zone.
                _ = try await routes.call(client, .delete, "/v1/me/push-preferences", own, expect: .ok)
                #expect(try await routes.call(client, .get, "/v1/me/push-preferences", own, expect: .ok)["timezone"] as? String == "America/Denver")

                // The export carries the profile.
                let export = try jsonObject(try await client.execute(uri: "/v1/users/ada/export", method: .get, headers: admin))
                let exported = try #require(export["user"] as? [String: Any])
                #expect(exported["time_zone"] as? String == "America/Denver")
                #expect((exported["properties"] as? [String: Any])?["plan"] as? String == "team")
            }
        }
    }

    @Test func badProfilesAreRefusedAndChangeNothing() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await collections.app(db).test(.router) { client in
                _ = try await routes.call(client, .put, "/v1/users/ada", admin, #"{"properties":{"a":"1"}}"#, expect: .created)
                let cases: [(String, String)] = [
                    (#"{"locale":"english please"}"#, "invalid_locale"),
                    (#"{"locale":7}"#, "invalid_user"),
                    (#"{"time_zone":"Mars/Olympus"}"#, "invalid_time_zone"),
                    (#"{"properties":[1,2]}"#, "invalid_properties"),
                    (#"{"properties":{"first name":"Ada"}}"#, "invalid_properties"),
                    (#"{"properties":{"deep":{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}}}}}}}}}}}"#, "invalid_properties"),
                    (#"{"properties":{"big":"\#(String(repeating: "x", count: 17_000))"}}"#, "properties_too_large"),
                ]
                for (body, code) in cases {
                    let response = try await client.execute(uri: "/v1/users/ada", method: .put, headers: admin, body: ByteBuffer(string: body))
                    #expect(response.status == .badRequest, "\(body.prefix(80))")
                    let found = try errorCode(response)
                    // A value of the wrong JSON type is the body's decoding error, whatever its code.
                    if code != "invalid_user" { #expect(found == code, "\(body.prefix(80)): \(String(buffer: response.body))") }
                }
                // Two halves that fit alone but not merged: refused whole, the first half kept as it was.
                let half = String(repeating: "y", count: 9_000)
                _ = try await routes.call(client, .put, "/v1/users/ada", admin, #"{"properties":{"one":"\#(half)"}}"#, expect: .ok)
                try await routes.expectError(
                    client,
                    .put,
                    "/v1/users/ada",
                    admin,
                    #"{"nickname":"Changed","properties":{"two":"\#(half)"}}"#,
                    status: .badRequest,
                    code: "properties_too_large"
                )
                let user = try await routes.call(client, .get, "/v1/users/ada", admin, expect: .ok)
                #expect(user["nickname"] as? String == "" && (user["properties"] as? [String: Any])?.keys.sorted() == ["a", "one"])
                for query in ["property.first%20name=x", "limit=0", "after=\(String(repeating: "z", count: 200))"] {
                    let response = try await client.execute(uri: "/v1/users?\(query)", method: .get, headers: admin)
                    #expect(response.status == .badRequest, "\(query)")
                }
            }
        }
    }

    @Test func usersAreListedByIdAndFilteredByProperties() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await collections.app(db).test(.router) { client in
                let people: [(String, String)] = [
                    ("a", #"{"plan":"pro","seats":30,"vip":true}"#),
                    ("b", #"{"plan":"free","seats":"30"}"#),
                    ("c", #"{"plan":"pro","vip":false}"#),
                    ("d", "{}"),
                    ("e", #"{"plan":"pro","seats":30}"#),
                ]
                for (id, properties) in people {
                    _ = try await routes.call(client, .put, "/v1/users/\(id)", admin, #"{"properties":\#(properties)}"#, expect: .created)
                }
                func list(_ query: String) async throws -> [String] {
                    var found: [String] = []
                    var after: String?
                    repeat {
                        let page = try await routes.call(
                            client,
                            .get,
                            "/v1/users?limit=2&\(query)" + (after.map { "&after=\($0)" } ?? ""),
                            admin,
                            expect: .ok
                        )
                        found += (page["users"] as? [[String: Any]] ?? []).compactMap { $0["user_id"] as? String }
                        after = page["next"] as? String
                    } while after != nil
                    return found
                }
                #expect(try await list("") == ["a", "b", "c", "d", "e"])
                #expect(try await list("property.plan=pro") == ["a", "c", "e"])
                // A number matches a number property or the same text; a boolean its boolean.
                #expect(try await list("property.seats=30") == ["a", "b", "e"])
                #expect(try await list("property.plan=pro&property.vip=true") == ["a"])
                #expect(try await list("property.plan=none").isEmpty)
            }
        }
    }

    @Test func templatesReadTheRecipientsProfilePerRecipient() async throws {
        try await TestPostgres.withDatabase(maximumConnections: 4) { (db: TestDatabase) async throws in
            let world = try await collections.world(db, users: ["u1", "u2", "u3"])
            _ = try await TemplateStore(client: db.client).put(Self.greeting)
            try await collections.app(db).test(.router) { client in
                _ = try await routes.call(
                    client,
                    .put,
                    "/v1/users/u1",
                    admin,
                    #"{"nickname":"Ada","locale":"en","properties":{"first_name":"Ada","vip":true}}"#,
                    expect: .ok
                )
                _ = try await routes.call(client, .put, "/v1/users/u2", admin, #"{"nickname":"Bo","properties":{"first_name":"Bo"}}"#, expect: .ok)
                // A field the profile does not have is refused when the template is defined.
                try await routes.expectError(
                    client,
                    .put,
                    "/v1/templates/bad",
                    admin,
                    #"{"name":"Bad","data":{"t":"{{user.email}}"}}"#,
                    status: .badRequest,
                    code: "invalid_template"
                )

                // Targets: each copy is the recipient's own; the notification keeps the shared rendering.
                let sent = try await routes.call(
                    client,
                    .post,
                    "/v1/notifications",
                    admin,
                    #"{"channel_url":"feed","template_key":"greeting","targets":["u1","u2"],"variables":{"title":"Welcome"}}"#,
                    expect: .created
                )
                #expect((sent["data"] as? [String: Any])?["title"] as? String == "Welcome for ")
                let id = try #require(sent["id"] as? String)
                func shown(_ user: String, _ notification: String) async throws -> [String: Any]? {
                    let feed = try await collections.collection(client, world.sessions[user])
                    let found = (feed["notifications"] as? [[String: Any]] ?? []).first { $0["id"] as? String == notification }
                    return found?["data"] as? [String: Any]
                }
                #expect(try await shown("u1", id)?["title"] as? String == "Welcome for Ada")
                #expect(try await shown("u1", id)?["who"] as? String == "Ada/u1/en (vip)")
                #expect(try await shown("u2", id)?["who"] as? String == "Bo/u2/")

                // An edit renders every copy again, with the profile as it is now.
                _ = try await routes.call(client, .put, "/v1/users/u2", admin, #"{"properties":{"first_name":"Bob"}}"#, expect: .ok)
                _ = try await routes.call(client, .patch, "/v1/notifications/\(id)", admin, #"{"variables":{"title":"Hello"}}"#, expect: .ok)
                #expect(try await shown("u1", id)?["title"] as? String == "Hello for Ada")
                #expect(try await shown("u2", id)?["title"] as? String == "Hello for Bob")

                // A broadcast: the fan-out renders each user it reaches, batch by batch.
                let broadcast = try await routes.call(
                    client,
                    .post,
                    "/v1/notifications",
                    admin,
                    #"{"channel_url":"feed","template_key":"greeting","audience":"all","variables":{"title":"News"}}"#,
                    expect: .accepted
                )
                let broadcastText = try #require(broadcast["id"] as? String)
                let broadcastID = try #require(Int64(broadcastText))
                while try await NotificationStore(client: db.client).fanOutNextBatch(size: 2) != nil {}
                let copies = try await db.client.query(
                    """
                    SELECT u.id, coalesce(r.data, n.data)->>'who', coalesce(r.push_title, n.push_title)
                    FROM notification_recipients r JOIN users u ON u.key = r.user_key JOIN notifications n ON n.id = r.notification_id
                    WHERE r.notification_id = \(broadcastID) ORDER BY u.id
                    """
                ).map { try $0.decode((String, String, String).self) }
                #expect(copies.map(\.0) == ["u1", "u2", "u3"])
                #expect(copies.map(\.1) == ["Ada/u1/en (vip)", "Bo/u2/", "/u3/"])
                #expect(copies.map(\.2) == ["Hi Ada", "Hi Bo", "Hi "])

                // A template that does not read the profile keeps one rendering: no copy has its own.
                let plain = try await routes.call(
                    client,
                    .post,
                    "/v1/notifications",
                    admin,
                    #"{"channel_url":"feed","template_key":"plain","targets":["u1","u2"],"variables":{"title":"x"}}"#,
                    expect: .created
                )
                let own = try await db.client.query(
                    "SELECT count(*) FROM notification_recipients WHERE notification_id = \(Int64(plain["id"] as! String)!) AND data IS NOT NULL"
                )
                #expect(try own[0].decode(Int.self) == 0)
            }
        }
    }
}
