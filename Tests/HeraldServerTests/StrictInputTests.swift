import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Testing

/// The API's contract at its edges, as a client library relies on it: invalid JSON anywhere is a 400,
/// a field a route does not know is a 400 naming it, ids have one spelling, a named device must be
/// the caller's — and none of these refusals changes anything.
@Suite("Strict input")
struct StrictInputTests {
    static let adminToken = "test-admin-token-strict-0123456789"

    /// Channels `feed` (categories `a` default and `b`) and `bare` (none), templates `plain` and
    /// `filed` (category `b`), users u1 and u2 with sessions.
    func seed(_ db: TestDatabase) async throws -> [String: String] {
        _ = try await ChannelStore(client: db.client).put(
            Channel(
                url: "feed",
                kind: .feed,
                name: "Feed",
                categories: [.init(id: "a", name: "A", isDefault: true), .init(id: "b", name: "B", isDefault: false)]
            )
        )
        _ = try await ChannelStore(client: db.client).put(Channel(url: "bare", kind: .feed, name: "Bare"))
        let title = Template.Variable(name: "title", type: .string, required: true)
        _ = try await TemplateStore(client: db.client).put(
            Template(key: "plain", name: "Plain", variables: [title], data: .object(["title": .string("{{title}}")]))
        )
        _ = try await TemplateStore(client: db.client).put(
            Template(
                key: "filed",
                name: "Filed",
                variables: [title],
                data: .object(["title": .string("{{title}}")]),
                category: "b"
            )
        )
        var sessions: [String: String] = [:]
        for user in ["u1", "u2"] {
            _ = try await UserStore(client: db.client).upsert(id: user, nickname: nil, profileURL: nil)
            sessions[user] = try #require(try await SessionStore(client: db.client).create(userID: user, lifetime: 3600)).token.text
        }
        return sessions
    }

    /// One notification from `plain` in `feed` for u1; its id.
    func sendOne(_ client: some TestClientProtocol) async throws -> String {
        let body = #"{"channel_url":"feed","template_key":"plain","variables":{"title":"t"},"targets":["u1"]}"#
        let response = try await call(client, .post, "/v1/notifications", Self.adminToken, Array(body.utf8))
        #expect(response.status == .created)
        return try #require(try jsonObject(response)["id"] as? String)
    }

    func call(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ path: String,
        _ bearer: String?,
        _ body: [UInt8]? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> TestResponse {
        var headers = jsonHeaders(bearer: bearer)
        headers.append(contentsOf: extra)
        return try await client.execute(uri: path, method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) })
    }

    func unread(_ client: some TestClientProtocol, _ session: String?) async throws -> Int? {
        try jsonObject(try await call(client, .get, "/v1/me/unread", session))["total"] as? Int
    }

    @Test func invalidJSONAnywhereIsA400AndMarksNothingRead() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let sessions = try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                _ = try await sendOne(client)
                #expect(try await unread(client, sessions["u1"]) == 1)
                let invalid: [[UInt8]] = [
                    Array(#"{"a":-}"#.utf8), Array(#"{"a":01}"#.utf8), Array(#"{"a":1,}"#.utf8), Array(#"{"notification_ids":["1",]}"#.utf8),
                    Array(#"{"a":"\#u{01}"}"#.utf8), [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D], Array(" ".utf8),
                    Array(#"{"a":1} x"#.utf8),
                ]
                for body in invalid {
                    for path in ["/v1/me/channels/feed/read", "/v1/me/channels/feed/seen", "/v1/me/delivered"] {
                        let response = try await call(client, .post, path, sessions["u1"], body)
                        #expect(response.status == .badRequest, "\(path) \(String(decoding: body, as: UTF8.self).debugDescription)")
                        #expect(try errorCode(response) == "invalid_json")
                    }
                }
                // Nothing was marked read or seen by any of them.
                #expect(try await unread(client, sessions["u1"]) == 1)
                let load = try jsonObject(try await call(client, .get, "/v1/me/channels/feed/collection", sessions["u1"]))
                #expect(((load["channel"] as? [String: Any])?["state"] as? [String: Any])?["last_seen_at"] is NSNull, "\(load)")

                // A field of the wrong name is refused too; only an empty body (or no ids) means "all".
                let misnamed = try await call(client, .post, "/v1/me/channels/feed/read", sessions["u1"], Array(#"{"ids":["1"]}"#.utf8))
                #expect(try errorCode(misnamed) == "unknown_field")
                #expect(try await unread(client, sessions["u1"]) == 1)
                #expect(try await call(client, .post, "/v1/me/channels/feed/read", sessions["u1"], []).status == .ok)
                #expect(try await unread(client, sessions["u1"]) == 0)
            }
        }
    }

    @Test func unknownFieldsAreRefusedOnEveryRouteNamingTheField() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let sessions = try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let notification = try await sendOne(client)
                let device = String(repeating: "ab", count: 32)
                let cases: [(HTTPRequest.Method, String, String?, String, String)] = [
                    (
                        .post, "/v1/notifications", Self.adminToken,
                        #"{"channel_url":"feed","template_key":"plain","variables":{"title":"t"},"targets":["u2"],"push":{"forcePush":true}}"#,
                        "$.push.forcePush"
                    ),
                    (
                        .post, "/v1/notifications", Self.adminToken,
                        #"{"channel_url":"feed","template_key":"plain","variables":{"title":"t"},"targets":["u2"],"target":["u1"]}"#, "$.target"
                    ),
                    (.patch, "/v1/notifications/\(notification)", Self.adminToken, #"{"variables":{"title":"x"},"varaibles":{}}"#, "$.varaibles"),
                    (.put, "/v1/users/u3", Self.adminToken, #"{"nickname":"N","nick_name":"M"}"#, "$.nick_name"),
                    (.post, "/v1/users/u1/sessions", Self.adminToken, #"{"expires_in":60,"expiresIn":60}"#, "$.expiresIn"),
                    (
                        .put, "/v1/channels/other", Self.adminToken,
                        #"{"kind":"feed","name":"O","categories":[{"id":"x","name":"X","is_default":true,"default":true}]}"#,
                        "$.categories[0].default"
                    ),
                    (
                        .put, "/v1/templates/other", Self.adminToken,
                        #"{"name":"O","data":{},"variables":[{"name":"v","type":"string","requierd":true}]}"#, "$.variables[0].requierd"
                    ),
                    (.put, "/v1/me/devices/\(device)", sessions["u1"], #"{"environment":"sandbox","topic":"com.example","uniq":true}"#, "$.uniq"),
                    (.post, "/v1/me/channels/feed/seen", sessions["u1"], #"{"seen":"2024-01-01T00:00:00Z"}"#, "$.seen"),
                    (.post, "/v1/me/delivered", sessions["u1"], #"{"notification_ids":["\#(notification)"],"ids":[]}"#, "$.ids"),
                    (.post, "/v1/me/events", sessions["u1"], #"{"type":"viewed","notification_ids":["\#(notification)"],"at":1}"#, "$.at"),
                    (.put, "/v1/me/channels/feed/push-preferences", sessions["u1"], #"{"push_trigger_option":"all","x":1}"#, "$.x"),
                ]
                for (method, path, bearer, body, field) in cases {
                    let response = try await call(client, method, path, bearer, Array(body.utf8))
                    #expect(response.status == .badRequest, "\(path) \(body)")
                    #expect(try errorCode(response) == "unknown_field", "\(path)")
                    let message = (try jsonObject(response)["error"] as? [String: Any])?["message"] as? String ?? ""
                    #expect(message.hasPrefix("\(field) is not a known field"), "\(path): \(message)")
                }
                // Nothing of those was written: no second notification, no user u3, no device.
                #expect(try await db.client.query("SELECT count(*) FROM notifications")[0].decode(Int64.self) == 1)
                #expect(try await db.client.query("SELECT count(*) FROM users WHERE id = 'u3'")[0].decode(Int64.self) == 0)
                #expect(try await db.client.query("SELECT count(*) FROM devices")[0].decode(Int64.self) == 0)
                #expect(try await db.client.query("SELECT count(*) FROM notification_events")[0].decode(Int64.self) == 0)

                // Free-form objects (variables, template data) take any key.
                let free = try await call(
                    client,
                    .put,
                    "/v1/templates/free",
                    Self.adminToken,
                    Array(#"{"name":"F","data":{"any":{"deep":"x"}}}"#.utf8)
                )
                #expect(free.status == .created, "\(String(buffer: free.body))")
            }
        }
    }

    @Test func oneNameForNotificationIDsAndOneSpellingForIDs() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let sessions = try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let notification = try await sendOne(client)
                for spelling in ["+\(notification)", "0\(notification)", " \(notification)", "\(notification).0"] {
                    for path in ["/v1/me/channels/feed/read", "/v1/me/delivered"] {
                        let response = try await call(client, .post, path, sessions["u1"], Array(#"{"notification_ids":["\#(spelling)"]}"#.utf8))
                        #expect(response.status == .badRequest, "\(path) \(spelling)")
                    }
                    let events = try await call(
                        client,
                        .post,
                        "/v1/me/events",
                        sessions["u1"],
                        Array(#"{"type":"viewed","notification_ids":["\#(spelling)"]}"#.utf8)
                    )
                    #expect(events.status == .badRequest)
                    let page = try await call(
                        client,
                        .get,
                        "/v1/me/channels/feed/notifications?before=\(spelling.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)",
                        sessions["u1"]
                    )
                    #expect(page.status == .badRequest)
                }
                #expect(try await unread(client, sessions["u1"]) == 1)
                // The one spelling, under the one name, on all three routes.
                #expect(
                    try await call(client, .post, "/v1/me/delivered", sessions["u1"], Array(#"{"notification_ids":["\#(notification)"]}"#.utf8))
                        .status == .ok
                )
                #expect(
                    try await call(
                        client,
                        .post,
                        "/v1/me/events",
                        sessions["u1"],
                        Array(#"{"type":"clicked","notification_ids":["\#(notification)"]}"#.utf8)
                    ).status == .noContent
                )
                let read = try await call(
                    client,
                    .post,
                    "/v1/me/channels/feed/read",
                    sessions["u1"],
                    Array(#"{"notification_ids":["\#(notification)"]}"#.utf8)
                )
                #expect(try jsonObject(read)["unread_count"] as? Int == 0)
            }
        }
    }

    @Test func aNamedDeviceMustBeWellFormedAndTheCallersOwn() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let sessions = try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                _ = try await sendOne(client)
                let mine = String(repeating: "a1", count: 32)
                let theirs = String(repeating: "b2", count: 32)
                #expect(
                    try await call(
                        client,
                        .put,
                        "/v1/me/devices/\(mine)",
                        sessions["u1"],
                        Array(#"{"environment":"sandbox","topic":"com.example"}"#.utf8)
                    ).status == .created
                )
                #expect(
                    try await call(
                        client,
                        .put,
                        "/v1/me/devices/\(theirs)",
                        sessions["u2"],
                        Array(#"{"environment":"sandbox","topic":"com.example"}"#.utf8)
                    ).status == .created
                )
                let listed = try jsonObject(try await call(client, .get, "/v1/me/devices", sessions["u1"]))
                let myID = try #require((listed["devices"] as? [[String: Any]])?.first?["id"] as? String)
                let load = try jsonObject(try await call(client, .get, "/v1/me/channels/feed/collection", sessions["u1"]))
                let token = try #require(load["next_token"] as? String)
                let listToken = try #require(try jsonObject(try await call(client, .get, "/v1/me/channels", sessions["u1"]))["next_token"] as? String)
                let paths = [
                    "/v1/me/channels/feed/collection", "/v1/me/channels/feed/collection?token=\(token)",
                    "/v1/me/channels", "/v1/me/channels?token=\(listToken)", "/v1/me/channels?token=forged",
                ]
                func named(_ path: String, header: String?, query: String?) async throws -> TestResponse {
                    let separator = path.contains("?") ? "&" : "?"
                    let uri = query.map { path + separator + "device=" + $0 } ?? path
                    var headers = HTTPFields()
                    if let header { headers[HTTPField.Name("Herald-Device")!] = header }
                    return try await call(client, .get, uri, sessions["u1"], headers: headers)
                }
                for path in paths {
                    for (header, query, status, code) in [
                        ("zz", nil, HTTPResponse.Status.badRequest, "invalid_device"), (nil, "abc", .badRequest, "invalid_device"),
                        (String(repeating: "a", count: 63), nil, .badRequest, "invalid_device"), ("+\(myID)", nil, .badRequest, "invalid_device"),
                        (mine, theirs, .badRequest, "invalid_device"),
                        (theirs, nil, .notFound, "device_not_found"), (nil, theirs, .notFound, "device_not_found"),
                        ("999999", nil, .notFound, "device_not_found"),
                    ] as [(String?, String?, HTTPResponse.Status, String)] {
                        let response = try await named(path, header: header, query: query)
                        #expect(response.status == status, "\(path) \(header ?? "-") \(query ?? "-")")
                        #expect(try errorCode(response) == code)
                    }
                    // The caller's own device, by token or id, in the header or the query, any case.
                    for (header, query) in [(mine, nil), (nil, mine), (mine.uppercased(), nil), (myID, nil), (nil, myID), (mine, mine)]
                        as [(String?, String?)]
                    {
                        let response = try await named(path, header: header, query: query)
                        #expect(response.status == .ok, "\(path) \(header ?? "-") \(query ?? "-"): \(String(buffer: response.body))")
                    }
                }
                // A refused first load did not mark the channel opened.
                #expect(
                    try await db.client.query(
                        "SELECT count(*) FROM channel_states s JOIN users u ON u.key = s.user_key WHERE u.id = 'u2' AND s.opened"
                    )[0].decode(Int64.self) == 0
                )
                var headers = HTTPFields()
                headers[HTTPField.Name("Herald-Device")!] = mine
                #expect(try await call(client, .get, "/v1/me/channels/feed/collection", sessions["u2"], headers: headers).status == .notFound)
                #expect(
                    try await db.client.query(
                        "SELECT count(*) FROM channel_states s JOIN users u ON u.key = s.user_key WHERE u.id = 'u2' AND s.opened"
                    )[0].decode(Int64.self) == 0
                )
            }
        }
    }

    @Test func aTemplatesCategoryTheChannelLacksRefusesTheSend() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                _ = try await sendOne(client)
                func send(_ channel: String, _ template: String, category: String? = nil) async throws -> TestResponse {
                    let named = category.map { #","category":"\#($0)""# } ?? ""
                    let body = #"{"channel_url":"\#(channel)","template_key":"\#(template)","variables":{"title":"t"},"targets":["u2"]\#(named)}"#
                    return try await call(client, .post, "/v1/notifications", Self.adminToken, Array(body.utf8))
                }
                let refused = try await send("bare", "filed")
                #expect(refused.status == .badRequest)
                #expect(try errorCode(refused) == "unknown_category")
                let message = (try jsonObject(refused)["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(message.contains("'b'") && message.contains("'bare'"), "\(message)")
                #expect(try await send("bare", "filed", category: "a").status == .badRequest)
                // Where the channel has it, the template's category is used; a send may name another.
                let filed = try await send("feed", "filed")
                #expect(try jsonObject(filed)["category"] as? String == "b")
                #expect(try jsonObject(try await send("feed", "filed", category: "a"))["category"] as? String == "a")
                #expect(try jsonObject(try await send("feed", "plain"))["category"] as? String == "a")
                #expect(try jsonObject(try await send("bare", "plain"))["category"] as? String == "")
                #expect(try await db.client.query("SELECT count(*) FROM notifications")[0].decode(Int64.self) == 5)
            }
        }
    }

    @Test func valuesThatOnlyLookValidAreRefusedNamingTheField() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let sessions = try await seed(db)
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                _ = try await sendOne(client)
                for url in [".", ".."] {
                    let response = try await call(client, .put, "/v1/channels/\(url)", Self.adminToken, Array(#"{"kind":"feed","name":"Dots"}"#.utf8))
                    #expect(response.status == .badRequest || response.status == .notFound, "\(url)")
                    #expect(Channel.urlProblem(url) != nil)
                }
                for data in [#""{{""#, #""a {{""#, #""{{\n""#, #""{{{""#] {
                    let response = try await call(
                        client,
                        .put,
                        "/v1/templates/dangling",
                        Self.adminToken,
                        Array(#"{"name":"D","data":{"t":\#(data)}}"#.utf8)
                    )
                    #expect(response.status == .badRequest, "\(data)")
                    let message = (try jsonObject(response)["error"] as? [String: Any])?["message"] as? String ?? ""
                    #expect(message.hasPrefix("$.data.t"), "\(message)")
                }
                #expect(
                    try await call(
                        client,
                        .put,
                        "/v1/templates/fine",
                        Self.adminToken,
                        Array(#"{"name":"F","data":{"t":"{{=<% %>=}} {{ literal"}}"#.utf8)
                    ).status == .created
                )
                for seen in ["2024-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T23:60:00Z"] {
                    let response = try await call(client, .post, "/v1/me/channels/feed/seen", sessions["u1"], Array(#"{"seen_at":"\#(seen)"}"#.utf8))
                    #expect(response.status == .badRequest, "\(seen)")
                    #expect(try errorCode(response) == "invalid_seen_at")
                }
                let leap = try await call(
                    client,
                    .post,
                    "/v1/me/channels/feed/seen",
                    sessions["u1"],
                    Array(#"{"seen_at":"2024-02-29T00:00:00Z"}"#.utf8)
                )
                #expect(try jsonObject(leap)["last_seen_at"] as? String == "2024-02-29T00:00:00.000Z")
            }
        }
    }
}
