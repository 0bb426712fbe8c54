import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Testing

@testable import HeraldServer
@testable import HeraldServices

/// Erasing a user (`DELETE /v1/users/{user_id}`): in the push suite, because an erased user's devices
/// must never be pushed again, and the dispatcher's rounds are driven here.
extension PushTests {
    @Test func erasingAUserRemovesEverythingOfTheirsClosesTheirStreamAndStopsTheirPushes() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["gone", "kept"], devices: ["gone": [Self.token(1)], "kept": [Self.token(2)]])
            defer { Task { await world.shutdown() } }
            let goneKey = try await userKey(world, "gone")
            try await withLiveServer(world) { port, hub, client in
                let admin = jsonHeaders(bearer: Self.adminToken)
                func call(
                    _ method: HTTPRequest.Method,
                    _ uri: String,
                    _ user: String?,
                    _ body: String? = nil,
                    key: String? = nil
                ) async throws -> TestResponse {
                    var headers = user.map { jsonHeaders(bearer: world.sessions[$0]) } ?? admin
                    if let key { headers[HTTPField.Name("Idempotency-Key")!] = key }
                    return try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
                }
                // Everything a user leaves behind: copies (targeted, a broadcast's), a read, a click,
                // preferences, an idempotency record that names them, pushes delivered and queued.
                let both = try await call(
                    .post,
                    "/v1/notifications",
                    nil,
                    #"{"channel_url":"feed","template_key":"plain","targets":["gone","kept"],"variables":{"title":"both"}}"#,
                    key: "names-gone"
                )
                #expect(both.status == .created)
                let keptOnly = try await call(
                    .post,
                    "/v1/notifications",
                    nil,
                    #"{"channel_url":"feed","template_key":"plain","targets":["kept"],"variables":{"title":"kept"}}"#,
                    key: "names-kept"
                )
                #expect(keptOnly.status == .created)
                let broadcast = try await call(
                    .post,
                    "/v1/notifications",
                    nil,
                    #"{"channel_url":"feed","template_key":"plain","audience":"all","variables":{"title":"all"}}"#
                )
                #expect(broadcast.status == .accepted)
                while try await NotificationStore(client: db.client).fanOutNextBatch(size: 1) != nil {}
                let clicked = try #require(try jsonObject(both)["id"] as? String)
                #expect(
                    try await call(.post, "/v1/me/events", "gone", #"{"type":"clicked","notification_ids":["\#(clicked)"]}"#).status == .noContent
                )
                #expect(try await call(.post, "/v1/me/channels/feed/read", "gone", "{}").status == .ok)
                #expect(try await call(.put, "/v1/me/push-preferences", "gone", #"{"push_trigger_option":"mention_only"}"#).status == .ok)
                #expect(try await call(.put, "/v1/me/channels/feed/push-preferences", "gone", #"{"push_trigger_option":"off"}"#).status == .ok)
                try await world.drain()
                // A push the dispatcher has not sent yet when the user goes.
                try await world.send("queued", to: ["gone"])
                let stream = try await TestStream.open(port: port, session: world.sessions["gone"]!)

                let keptBefore = try await GeneratedRequestsTests.snapshot(of: "kept", db)
                // The counts, without the snapshot's horizon (which moves with every transaction).
                func counts(_ user: String) async throws -> NSDictionary {
                    var unread = try jsonObject(try await call(.get, "/v1/me/unread", user))
                    #expect(unread.removeValue(forKey: "horizon") is String)
                    return NSDictionary(dictionary: unread)
                }
                let keptUnread = try await counts("kept")
                let pushesBefore = world.mock.requests.count

                let erase = try await call(.delete, "/v1/users/gone", nil)
                #expect(erase.status == .accepted)
                #expect(erase.headers[.location] == "/v1/users/gone/erasure")
                let started = try jsonObject(erase)
                #expect(started["status"] as? String == "running")
                #expect(started["user_id"] as? String == "gone")
                #expect((started["removed_rows"] as? Int ?? 0) >= 6)  // the user, a session, a device, presence, two preferences

                let (_, code, reason) = try await stream.drainUntilClosed()
                #expect(code == 1008)
                #expect(reason == "session revoked")
                // The session is gone at once; asking again answers the same job.
                #expect(try await call(.get, "/v1/me/unread", "gone").status == .unauthorized)
                let again = try await call(.delete, "/v1/users/gone", nil)
                #expect(again.status == .accepted)
                #expect(try jsonObject(again)["requested_at"] as? String == started["requested_at"] as? String)

                // Bounded batches, until the job says it is done.
                let erasures = UserErasureStore(client: db.client)
                var batches = 0
                try await waitUntil("the erasure to finish") {
                    let progress = try #require(try await erasures.eraseNextBatch(size: 2, grace: .zero))
                    #expect(progress.removedRows <= 2)
                    if progress.removedRows > 0 { batches += 1 }
                    return progress.finished
                }
                #expect(batches >= 3)
                let status = try jsonObject(try await call(.get, "/v1/users/gone/erasure", nil))
                #expect(status["status"] as? String == "done")
                #expect(status["finished_at"] is String)

                // No row anywhere names the user's key or id (the job's own record aside).
                let leftovers = try await db.client.query(
                    """
                    SELECT c.table_name, c.column_name FROM information_schema.columns c
                    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
                    WHERE c.table_schema = current_schema() AND c.column_name IN ('user_key', 'user_id') AND c.table_name <> 'user_erasures'
                    """
                ).map { try $0.decode((String, String).self) }
                #expect(leftovers.count >= 10)
                for (table, column) in leftovers {
                    let value = column == "user_key" ? "\(goneKey)" : "'gone'"
                    let rows = try await world.query("SELECT count(*) FROM \(table) WHERE \(column) = \(value)")[0].decode(Int.self)
                    #expect(rows == 0, "\(table).\(column) still has \(rows) rows of the erased user")
                }
                #expect(try await world.query("SELECT count(*) FROM users WHERE id = 'gone'")[0].decode(Int.self) == 0)
                #expect(try await world.query("SELECT key FROM idempotency_keys ORDER BY key").map { try $0.decode(String.self) } == ["names-kept"])

                // The queued push never goes out; the other user's rows and counts did not move.
                try await world.drain()
                #expect(world.mock.requests.count == pushesBefore)
                #expect(try await GeneratedRequestsTests.snapshot(of: "kept", db) == keptBefore)
                #expect(
                    try await counts("kept") == keptUnread
                )
                try await waitUntil("the hub to forget the stream") { hub.connections(of: goneKey).isEmpty }

                // The id can be used again, and starts empty.
                #expect(try await call(.put, "/v1/users/gone", nil, "{}").status == .created)
                let session = try #require(
                    try jsonObject(try await call(.post, "/v1/users/gone/sessions", nil))["token"] as? String
                )
                let fresh = try await client.execute(uri: "/v1/me/unread", method: .get, headers: jsonHeaders(bearer: session))
                #expect(try jsonObject(fresh)["total"] as? Int == 0)
                let channels = try jsonObject(try await client.execute(uri: "/v1/me/channels", method: .get, headers: jsonHeaders(bearer: session)))
                #expect((channels["feed"] as? [Any])?.isEmpty == true && (channels["chat"] as? [Any])?.isEmpty == true)
                let feed = try jsonObject(
                    try await client.execute(uri: "/v1/me/channels/feed/collection", method: .get, headers: jsonHeaders(bearer: session))
                )
                #expect((feed["notifications"] as? [Any])?.isEmpty == true)
                // The finished job stays visible under the id.
                #expect(try jsonObject(try await call(.get, "/v1/users/gone/erasure", nil))["status"] as? String == "done")
            }
        }
    }

    @Test func erasingAnUnknownUserIsNotFound() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            try await heraldApplication(db, adminToken: Self.adminToken).test(.router) { client in
                let admin = jsonHeaders(bearer: Self.adminToken)
                let erase = try await client.execute(uri: "/v1/users/nobody", method: .delete, headers: admin)
                #expect(erase.status == .notFound)
                #expect(try errorCode(erase) == "user_not_found")
                let status = try await client.execute(uri: "/v1/users/nobody/erasure", method: .get, headers: admin)
                #expect(status.status == .notFound)
                #expect(try errorCode(status) == "erasure_not_found")
                let export = try await client.execute(uri: "/v1/users/nobody/export", method: .get, headers: admin)
                #expect(export.status == .notFound)
                #expect(try errorCode(export) == "user_not_found")
            }
        }
    }
}
