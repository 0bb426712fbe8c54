import AsyncHTTPClient
import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import Postgres
import Prometheus
import Testing

@testable import HeraldServer
@testable import HeraldServices

/// Live streams, presence, delivery receipts and events, in process: a real server (HTTP/1 with the
/// WebSocket upgrade) on a loopback port, its hub listening on the test database, the dispatcher's
/// rounds driven by the test against the mock APNs. Part of the push suite: presence decides pushes,
/// and a closed stream answers the wants below the transaction horizon, so these tests need the push
/// cluster to themselves like the others.
extension PushTests {
    /// The world's server with live streams, run for the duration of `body`.
    func withLiveServer(
        _ world: World,
        configure: (inout LiveSettings) -> Void = { _ in },
        crossOrigin: CrossOriginPolicy = .sameOriginOnly,
        _ body: @escaping @Sendable (_ port: Int, _ hub: LiveHub, _ client: any TestClientProtocol) async throws -> Void
    ) async throws {
        var settings = LiveSettings()
        settings.multiDevice = world.settings.multiDevice
        settings.heartbeat = .seconds(1)
        settings.presenceTTL = .seconds(30)
        configure(&settings)
        let logger = Logger(label: "test.live")
        let hub = LiveHub(
            client: world.db.client,
            settings: settings,
            listener: PostgresListener(conninfo: world.db.directConninfo, channels: [LiveHint.channel], logger: logger),
            logger: logger
        )
        var dependencies = HeraldApplication.Dependencies(
            client: world.db.client,
            migrator: Migrator(client: world.db.client, migrations: try TestPostgres.repositoryMigrations()),
            metricsRegistry: PrometheusCollectorRegistry(),
            adminToken: PushTests.adminToken,
            secrets: world.box,
            hub: hub
        )
        dependencies.crossOrigin = crossOrigin
        let app = HeraldApplication.build(dependencies, host: "127.0.0.1", port: 0, logger: logger, services: [hub])
        try await app.test(.live) { client in
            try await body(try #require(client.port), hub, client)
        }
    }

    /// Waits until the server has taken the device's closed stream out of presence (the close
    /// reaches the client before the server has recorded it).
    func offline(_ world: World, device token: String) async throws {
        let (user, id) = try #require(
            try await world.query("SELECT user_key, id FROM devices WHERE token = '\(token)'").first?.decode((Int64, Int64).self)
        )
        try await waitUntil("the device to count as offline") {
            !(try await PresenceStore(client: world.db.client).isOnline(userKey: user, deviceID: id))
        }
    }

    /// Waits until the cluster's horizon has passed every write so far: a stream's close answers only
    /// the wants below its own horizon, which a transaction of another test open on the cluster holds
    /// back.
    func settled(_ world: World) async throws {
        let now = try await world.query("SELECT pg_current_xact_id()::text::bigint")[0].decode(Int64.self)
        try await waitUntil("the cluster's horizon to pass the writes so far") {
            try await world.query("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")[0].decode(Int64.self) > now
        }
    }

    func userKey(_ world: World, _ user: String) async throws -> Int64 {
        try #require(try await UserStore(client: world.db.client).key(user))
    }

    // MARK: - Presence and policies

    @Test(arguments: MultiDevicePolicy.allCases)
    func openStreamsSuppressPushesByThePolicy(_ policy: MultiDevicePolicy) async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let (d1, d2) = (Self.token(1), Self.token(2))
            let world = try await world(db, users: ["u1"], devices: ["u1": [d1, d2]]) { $0.multiDevice = policy }
            defer { Task { await world.shutdown() } }
            try await withLiveServer(world) { port, _, client in
                let s1 = try await TestStream.open(port: port, session: world.sessions["u1"]!, device: d1)
                let s2 = try await TestStream.open(port: port, session: world.sessions["u1"]!, device: d2)

                // Both online: the event reaches both sockets, and nobody is pushed.
                let first = try await world.send("one", to: ["u1"])
                for stream in [s1, s2] {
                    let event = try await stream.next(type: "notification.created")
                    #expect(event["channel_url"] as? String == "feed")
                    #expect((event["position"] as? String).flatMap(Int64.init) != nil)
                    let notification = try #require(event["notification"] as? [String: Any])
                    #expect(notification["id"] as? String == String(first))
                    #expect(notification["status"] as? String == "SENT")
                    #expect(event["unread_count"] as? Int == 1)
                    #expect(try await stream.next(type: "badge")["badge"] as? Int == 1)
                }
                try await world.drain()
                #expect(world.mock.requests.isEmpty)

                // d1 goes away: any_offline pushes it, all_offline does not (d2 is still online).
                try await settled(world)
                await s1.close()
                try await offline(world, device: d1)
                let second = try await world.send("two", to: ["u1"])
                #expect(
                    try await s2.next(type: "notification.created")["notification"].flatMap { ($0 as? [String: Any])?["id"] as? String }
                        == String(second)
                )
                try await world.drain()
                switch policy {
                case .anyOffline:
                    #expect(world.mock.requests.map(\.deviceToken) == [d1])
                    let herald = try #require(
                        (try JSONSerialization.jsonObject(with: Data(world.mock.requests[0].body)) as? [String: Any])?["herald"] as? [String: Any]
                    )
                    #expect(herald["notification_id"] as? String == String(second))
                case .allOffline:
                    #expect(world.mock.requests.isEmpty)
                }

                // Both gone: both policies push both devices (d1 synced first, so nothing is outstanding).
                try await settled(world)
                await s2.close()
                try await offline(world, device: d2)
                let sync = try await client.execute(
                    uri: "/v1/me/channels/feed/collection",
                    method: .get,
                    headers: {
                        var h = jsonHeaders(bearer: world.sessions["u1"])
                        h[HTTPField.Name("Herald-Device")!] = d1
                        return h
                    }()
                )
                #expect(sync.status == .ok)
                let before = world.mock.requests.count
                try await world.send("three", to: ["u1"])
                try await world.drain()
                #expect(Set(world.mock.requests.dropFirst(before).map(\.deviceToken)) == [d1, d2])
                #expect(world.mock.requests.count == before + 2)
            }
        }
    }

    // MARK: - Events

    @Test func readsDeliveriesUpdatesAndDeletesReachTheUsersStreams() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2"])
            defer { Task { await world.shutdown() } }
            try await withLiveServer(world) { port, _, client in
                let mine = try await TestStream.open(port: port, session: world.sessions["u1"]!)
                let other = try await TestStream.open(port: port, session: world.sessions["u2"]!)
                let id = try await world.send("hello", to: ["u1"])
                let created = try await mine.next(type: "notification.created")
                let createdAt = try #require((created["position"] as? String).flatMap(Int64.init))

                // A receipt: delivery.updated with a later position.
                let receipt = try await client.execute(
                    uri: "/v1/me/delivered",
                    method: .post,
                    headers: jsonHeaders(bearer: world.sessions["u1"]),
                    body: ByteBuffer(string: #"{"herald":{"type":"refresh","notification_id":"\#(id)"}}"#)
                )
                #expect(receipt.status == .ok)
                #expect(try jsonObject(receipt)["updated"] as? [String] == [String(id)])
                let delivered = try await mine.next(type: "delivery.updated")
                #expect(delivered["notification_ids"] as? [String] == [String(id)])
                #expect(delivered["status"] as? String == "DELIVERED")
                #expect(try #require((delivered["position"] as? String).flatMap(Int64.init)) > createdAt)

                // Marked read on "another device": channel.read with the new state, and the badge.
                let read = try await client.execute(
                    uri: "/v1/me/channels/feed/read",
                    method: .post,
                    headers: jsonHeaders(bearer: world.sessions["u1"]),
                    body: ByteBuffer(string: "{}")
                )
                #expect(read.status == .ok)
                let state = try await mine.next(type: "channel.read")
                #expect(state["unread_count"] as? Int == 0)
                #expect(state["last_read_at"] is String)
                #expect(try await mine.next(type: "badge")["badge"] as? Int == 0)

                // Admin update and delete.
                let patch = try await client.execute(
                    uri: "/v1/notifications/\(id)",
                    method: .patch,
                    headers: jsonHeaders(bearer: Self.adminToken),
                    body: ByteBuffer(string: #"{"variables":{"title":"changed"}}"#)
                )
                #expect(patch.status == .ok, "\(String(buffer: patch.body))")
                let updated = try await mine.next(type: "notification.updated")
                #expect((updated["notification"] as? [String: Any])?["data"] as? [String: String] == ["title": "changed"])
                #expect((updated["notification"] as? [String: Any])?["status"] as? String == "READ")
                let delete = try await client.execute(uri: "/v1/notifications/\(id)", method: .delete, headers: jsonHeaders(bearer: Self.adminToken))
                #expect(delete.status == .noContent)
                #expect(try await mine.next(type: "notification.deleted")["notification_id"] as? String == String(id))

                // u2 saw none of it: its next event is its own.
                try await world.send("for u2", to: ["u2"])
                let first = try await other.next()
                #expect(first["type"] as? String == "notification.created")
                #expect((first["notification"] as? [String: Any])?["data"] as? [String: String] == ["title": "for u2"])
                await mine.close()
                await other.close()
            }
        }
    }

    /// A channel renamed or deleted by an admin: the streams of the users who list it hear of it
    /// (a deletion with their new badge), a stranger's hear nothing.
    @Test func channelRenamesAndDeletesReachTheStreamsOfTheUsersWhoListTheChannel() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2", "u3"])
            defer { Task { await world.shutdown() } }
            try await withLiveServer(world) { port, _, client in
                let admin = jsonHeaders(bearer: Self.adminToken)
                // u2 lists the channel by having opened it (a first load), with nothing in it.
                let load = try await client.execute(
                    uri: "/v1/me/channels/feed/collection",
                    method: .get,
                    headers: jsonHeaders(bearer: world.sessions["u2"])
                )
                #expect(load.status == .ok)
                let (s1, s2, s3) = (
                    try await TestStream.open(port: port, session: world.sessions["u1"]!),
                    try await TestStream.open(port: port, session: world.sessions["u2"]!),
                    try await TestStream.open(port: port, session: world.sessions["u3"]!)
                )
                try await world.send("hello", to: ["u1"])
                #expect(try await s1.next()["type"] as? String == "notification.created")
                #expect(try await s1.next()["badge"] as? Int == 1)

                let renamed = try await client.execute(
                    uri: "/v1/channels/feed",
                    method: .put,
                    headers: admin,
                    body: ByteBuffer(
                        string:
                            #"{"kind":"feed","name":"Renamed","cover_url":"https://cdn.example.com/feed.png","custom_type":"promo","categories":[{"id":"news","name":"News","is_default":true}]}"#
                    )
                )
                #expect(renamed.status == .ok, "\(String(buffer: renamed.body))")
                for stream in [s1, s2] {
                    let event = try await stream.next()
                    #expect(event["type"] as? String == "channel.updated")
                    #expect(event["channel_url"] as? String == "feed")
                    #expect(event["kind"] as? String == "feed")
                    #expect(event["name"] as? String == "Renamed")
                    #expect(event["cover_url"] as? String == "https://cdn.example.com/feed.png")
                    #expect(event["custom_type"] as? String == "promo")
                }

                #expect(try await client.execute(uri: "/v1/channels/feed", method: .delete, headers: admin).status == .ok)
                for stream in [s1, s2] {
                    let event = try await stream.next()
                    #expect(event["type"] as? String == "channel.deleted")
                    #expect(event["channel_url"] as? String == "feed")
                    #expect(Set(event.keys) == ["type", "channel_url"])
                    #expect(try await stream.next()["badge"] as? Int == 0)
                }

                // u3 heard none of it: its first event is its own, in the channel made again.
                _ = try await ChannelStore(client: db.client).put(
                    HeraldCore.Channel(url: "feed", kind: .feed, name: "Feed", categories: [.init(id: "news", name: "News", isDefault: true)])
                )
                try await world.send("for u3", to: ["u3"])
                let first = try await s3.next()
                #expect(first["type"] as? String == "notification.created")
                #expect((first["notification"] as? [String: Any])?["data"] as? [String: String] == ["title": "for u3"])
                #expect(try await s3.next()["badge"] as? Int == 1)

                // Deleted again: now it is u3's, and not u1's, whose earlier removal names the same URL.
                #expect(try await client.execute(uri: "/v1/channels/feed", method: .delete, headers: admin).status == .ok)
                #expect(try await s3.next()["type"] as? String == "channel.deleted")
                _ = try await ChannelStore(client: db.client).put(
                    HeraldCore.Channel(url: "feed", kind: .feed, name: "Feed", categories: [.init(id: "news", name: "News", isDefault: true)])
                )
                try await world.send("for u1", to: ["u1"])
                #expect(try await s1.next()["type"] as? String == "notification.created")
                for stream in [s1, s2, s3] { await stream.close() }
            }
        }
    }

    @Test func revokingSessionsClosesTheirStreams() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1"])
            defer { Task { await world.shutdown() } }
            try await withLiveServer(world) { port, hub, client in
                let stream = try await TestStream.open(port: port, session: world.sessions["u1"]!)
                let revoke = try await client.execute(uri: "/v1/users/u1/sessions", method: .delete, headers: jsonHeaders(bearer: Self.adminToken))
                #expect(revoke.status == .ok)
                #expect(try jsonObject(revoke)["revoked"] as? Int == 1)
                let (_, code, reason) = try await stream.drainUntilClosed()
                #expect(code == 1008)
                #expect(reason == "session revoked")
                let key = try await userKey(world, "u1")
                try await waitUntil("the hub to forget the stream") { hub.connections(of: key).isEmpty }
            }
        }
    }

    /// The revocation's hint is lost (the listener is down and cannot reconnect): the heartbeat's
    /// session check closes the stream anyway, at the first check that starts after the revocation.
    @Test func aSessionRevokedWhileTheListenerIsDownClosesItsStreamWithinAHeartbeat() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2"])
            defer { Task { await world.shutdown() } }
            try await withLiveServer(world) { port, hub, _ in
                let stream = try await TestStream.open(port: port, session: world.sessions["u1"]!)
                let other = try await TestStream.open(port: port, session: world.sessions["u2"]!)
                let listenerBackends = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'herald-listener'"
                #expect(try await world.query(listenerBackends).count == 1)
                // Every pooled connection open before new ones are refused, so that the hub and the
                // test go on working through the window (the pool holds at most four).
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 { group.addTask { try await db.client.query("SELECT pg_sleep(0.2)") } }
                    try await group.waitForAll()
                }
                try await db.refusingNewConnections {
                    try await world.query("SELECT pg_terminate_backend(pid) FROM (\(listenerBackends)) AS l")
                    try await waitUntil("the listener to be gone") { try await world.query(listenerBackends).isEmpty }

                    _ = try await SessionStore(client: db.client).revokeAll(userID: "u1")
                    let checksBefore = hub.sessionChecksDone
                    let (_, code, reason) = try await stream.drainUntilClosed()
                    #expect(code == 1008)
                    #expect(reason == "session revoked")
                    // A check already under way may have read the session before it went; the next one
                    // may not.
                    #expect(hub.sessionChecksDone <= checksBefore + 2)
                    #expect(try await world.query(listenerBackends).isEmpty, "the hint could have arrived")
                    // The other user's session stands: its stream is still registered (and open: below).
                    #expect(hub.connections(of: try await userKey(world, "u2")).count == 1)
                }
                // Once the listener is back, the hub resyncs the stream that remains open.
                #expect(try await other.next()["type"] as? String == "resync")
                await other.close()
            }
        }
    }

    @Test func upgradeRequestsAreAuthenticatedAndPlainRequestsExplained() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1"], devices: ["u1": [Self.token(1)]])
            defer { Task { await world.shutdown() } }
            try await withLiveServer(world, crossOrigin: try CrossOriginPolicy(parsing: "https://app.example.com")) { port, _, client in
                let plain = try await client.execute(uri: "/v1/me/stream", method: .get, headers: jsonHeaders(bearer: world.sessions["u1"]))
                #expect(plain.status == .upgradeRequired)
                #expect(try errorCode(plain) == "upgrade_required")
                let anonymous = try await client.execute(uri: "/v1/me/stream", method: .get, headers: [:])
                #expect(anonymous.status == .unauthorized)
                let unknownDevice = try await client.execute(
                    uri: "/v1/me/stream?device=\(Self.token(9))",
                    method: .get,
                    headers: jsonHeaders(bearer: world.sessions["u1"])
                )
                #expect(unknownDevice.status == .notFound)
                #expect(try errorCode(unknownDevice) == "device_not_found")
                // An upgrade with a session that is not one is refused before the switch, as JSON.
                let upgrade = [
                    "GET /v1/me/stream HTTP/1.1", "Host: 127.0.0.1", "Connection: Upgrade", "Upgrade: websocket",
                    "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Authorization: Bearer not-a-session",
                    "", "",
                ].joined(separator: "\r\n")
                let refused = try await RawHTTPExchange.send(Array(upgrade.utf8), port: port).response
                #expect(refused.hasPrefix("HTTP/1.1 401 "), "\(refused)")
                #expect(refused.contains(#""code":"unauthorized""#))
                #expect(!refused.contains("101 Switching"))
                // A browser's upgrade carries its page's origin: one not listed is refused, even with a
                // good session (the token in a page's query would otherwise open the stream for it);
                // a listed one and Herald's own are admitted.
                let foreignUpgrade = [
                    "GET /v1/me/stream?access_token=\(world.sessions["u1"]!) HTTP/1.1", "Host: 127.0.0.1:\(port)",
                    "Origin: https://evil.example.net", "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "", "",
                ].joined(separator: "\r\n")
                let foreign = try await RawHTTPExchange.send(Array(foreignUpgrade.utf8), port: port).response
                #expect(foreign.hasPrefix("HTTP/1.1 403 "), "\(foreign)")
                #expect(foreign.contains(#""code":"origin_not_allowed""#))
                for origin in ["https://app.example.com", "http://127.0.0.1:\(port)"] {
                    try await TestStream.open(port: port, session: world.sessions["u1"]!, origin: origin).close()
                }
                // A browser authenticates with ?access_token= and may name the device by its id.
                let devices = try await client.execute(uri: "/v1/me/devices", method: .get, headers: jsonHeaders(bearer: world.sessions["u1"]))
                let deviceID = try #require((try jsonObject(devices)["devices"] as? [[String: Any]])?.first?["id"] as? String)
                let byQuery = try await client.execute(
                    uri: "/v1/me/stream?access_token=\(world.sessions["u1"]!)&device=\(deviceID)",
                    method: .get,
                    headers: [:]
                )
                #expect(byQuery.status == .upgradeRequired)
                let stream = try await TestStream.open(port: port, session: world.sessions["u1"]!, device: deviceID)
                #expect(try await PresenceStore(client: db.client).isOnline(userKey: try await userKey(world, "u1"), deviceID: Int64(deviceID)))
                await stream.close()
                let key = try await userKey(world, "u1")
                try await waitUntil("the closed stream's presence to go") {
                    !(try await PresenceStore(client: db.client).isOnline(userKey: key, deviceID: nil))
                }
            }
        }
    }

    // MARK: - Two processes

    /// Two `herald serve` processes on one database: an event caused on A reaches a stream on B, B's
    /// stream keeps its device online for every dispatcher, and when B is killed the device counts as
    /// offline once B's presence expires — and gets its refresh push.
    @Test func twoProcessesShareEventsAndPresenceAndAKilledOnesDevicesGoOffline() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let device = Self.token(1)
            let world = try await world(db, users: ["u1"], devices: ["u1": [device]])
            defer { Task { await world.shutdown() } }
            let ttl = 3
            let environment = db.heraldEnvironment.merging([
                "HERALD_SECRET_KEY": world.secretKeyHex, "HERALD_ADMIN_TOKEN": Self.adminToken,
                "HERALD_APNS_URL": world.mock.baseURL, "HERALD_APNS_CA_FILE": world.mock.trustRootFile,
                "HERALD_REFRESH_MIN_INTERVAL": "0s", "HERALD_PRESENCE_HEARTBEAT": "1s", "HERALD_PRESENCE_TTL": "\(ttl)s",
            ]) { $1 }
            let arguments = ["serve", "--port", "0", "--sql-dir", TestPostgres.repositoryRoot() + "/sql"]
            func start() async throws -> (HeraldProcess, Int) {
                let process = try HeraldProcess(arguments: arguments, environment: environment)
                let line = try await process.waitForLine(containing: "Herald listening on")
                return (process, try #require(line.split(separator: ":").last.flatMap { Int($0) }))
            }
            let (a, portA) = try await start()
            let (b, portB) = try await start()
            defer {
                a.signal(SIGKILL)
                b.signal(SIGKILL)
            }

            let stream = try await TestStream.open(port: portB, session: world.sessions["u1"]!, device: device)
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(portA)/v1/notifications")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(Self.adminToken)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(
                ByteBuffer(string: #"{"channel_url":"feed","template_key":"plain","variables":{"title":"from A"},"targets":["u1"]}"#)
            )
            let sent = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            #expect(sent.status == .created)
            let event = try await stream.next(type: "notification.created")
            #expect((event["notification"] as? [String: Any])?["data"] as? [String: String] == ["title": "from A"])

            // The want is recorded (by whichever dispatcher expanded the outbox), and no dispatcher
            // may claim the device: its stream on B makes it online.
            try await waitUntil("the outbox to be expanded into a want") {
                try await world.query("SELECT 1 FROM device_push_state WHERE wanted_xid IS NOT NULL AND (SELECT count(*) FROM push_outbox) = 0").count
                    == 1
            }
            #expect(
                try await PushStore(client: db.client).claimDue(limit: 10, terms: ClaimTerms(lease: .seconds(60), minimumInterval: .zero)).isEmpty
            )
            #expect(world.mock.requests.isEmpty)

            // B dies without a word: its presence lapses within the TTL, and A pushes the device.
            b.signal(SIGKILL)
            _ = try await b.waitForExit()
            let key = try await userKey(world, "u1")
            // The lease B left behind, as the database's clock sees it: never more than the TTL ahead.
            let (node, remaining) = try #require(
                try await world.query(
                    """
                    SELECT n.id, extract(epoch FROM n.expires_at - now())::float8 FROM stream_connections c
                    JOIN herald_nodes n ON n.id = c.node_id WHERE c.user_key = \(key)
                    """
                ).first?.decode((Int64, Double).self)
            )
            #expect(remaining > 0 && remaining <= Double(ttl))
            try await waitUntil("B's presence to expire") { !(try await PresenceStore(client: db.client).isOnline(userKey: key, deviceID: nil)) }
            // Offline because that lease passed (A's heartbeat may have removed the node already).
            let lapsed = try await world.query("SELECT now() >= expires_at FROM herald_nodes WHERE id = \(node)").first?.decode(Bool.self)
            #expect(lapsed ?? true)
            try await withTimeout(.seconds(30), what: "the refresh push") { await world.mock.waitForRequests(1) }
            #expect(world.mock.requests.map(\.deviceToken) == [device])
            #expect(world.mock.requests.first?.status == 200)
            a.signal(SIGTERM)
            #expect(try await a.waitForExit() == 0)
        }
    }

    // MARK: - Keep-alive

    /// A peer that answers nothing is pinged after one quiet interval and dropped after the second.
    @Test func aPeerThatNeverAnswersPingsIsDropped() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1"])
            defer { Task { await world.shutdown() } }
            try await withLiveServer(world, configure: { $0.pingInterval = .seconds(1) }) { port, hub, _ in
                let reader = try SlowStreamReader(port: port, session: world.sessions["u1"]!)
                let key = try await userKey(world, "u1")
                try await waitUntil("the stream to register") { !hub.connections(of: key).isEmpty }
                let opened = ContinuousClock.now
                try await waitUntil("the silent peer to be dropped") { hub.connections(of: key).isEmpty }
                #expect(ContinuousClock.now - opened >= .milliseconds(1_500))
                let frames = try await Task.detached { try reader.drain() }.value
                #expect(frames.contains { $0.opcode == 0x9 })  // it was pinged first
                #expect(frames.first.map { String(decoding: $0.payload, as: UTF8.self).contains(#""type":"ready""#) } == true)
            }
        }
    }

    // MARK: - Slow consumers

    @Test func aSlowReaderIsDisconnectedWithItsQueueBounded() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1"])
            defer { Task { await world.shutdown() } }
            let limit = 256 * 1024
            try await withLiveServer(
                world,
                configure: {
                    $0.queueBytes = limit
                    $0.closeGrace = .seconds(2)
                }
            ) { port, hub, _ in
                let reader = try SlowStreamReader(port: port, session: world.sessions["u1"]!)
                let key = try await userKey(world, "u1")
                try await waitUntil("the stream to register") { !hub.connections(of: key).isEmpty }
                let connection = try #require(hub.connections(of: key).first)
                // 30 KB events, each handled by the hub before the next, until it gives up on the socket.
                let big = String(repeating: "x", count: 30 * 1024)
                var sent = 0
                while !connection.isClosing {
                    try #require(sent < 1_000, "the slow reader was never disconnected")
                    let handled = hub.hintsHandled
                    try await world.send(big, to: ["u1"])
                    sent += 1
                    try await waitUntil("the hub to handle the send") { hub.hintsHandled > handled }
                }
                #expect(connection.peakQueuedBytes <= limit)
                let frames = try await Task.detached { try reader.drain() }.value
                let close = try #require(frames.last)
                #expect(close.closeCode == 1013)
                #expect(frames.filter { $0.opcode == 0x1 }.count < 2 * sent)  // not everything got through
                try await waitUntil("the hub to forget the stream") { hub.connections(of: key).isEmpty }
            }
        }
    }

    /// A client that pings without reading the pongs fills its queue like a slow reader of events,
    /// and is closed the same way (1013), its queue within the bound.
    @Test func pingsWithoutReadingThePongsCloseTheStream() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1"])
            defer { Task { await world.shutdown() } }
            let limit = 8 * 1024
            try await withLiveServer(
                world,
                configure: {
                    $0.queueBytes = limit
                    $0.closeGrace = .seconds(1)
                }
            ) { port, hub, _ in
                let reader = try SlowStreamReader(port: port, session: world.sessions["u1"]!)
                let key = try await userKey(world, "u1")
                try await waitUntil("the stream to register") { !hub.connections(of: key).isEmpty }
                let connection = try #require(hub.connections(of: key).first)
                var sent = 0
                while !connection.isClosing {
                    // Kernel buffers take a few megabytes before the server's writes wait at all.
                    try #require(sent < 1_000_000, "the pinging client was never disconnected")
                    let batch = await Task.detached { reader.sendPings(2_000) }.value
                    sent += batch
                    if batch < 2_000 { break }  // the server cut the connection
                }
                try await waitUntil("the stream to close") { connection.isClosing }
                #expect(connection.closeReason == "slow consumer")  // 1013
                #expect(connection.peakQueuedBytes <= limit)
                // The close frame itself may not reach this client: the server cuts a connection that
                // is still sending with a reset, which can discard what the client had not read yet.
                let frames = try await Task.detached { try reader.drain() }.value
                #expect(frames.filter { $0.opcode == 0xA }.count < sent)  // not every ping was answered
            }
        }
    }

    /// Past the per-user limit, a new stream closes the user's oldest; other users are untouched.
    @Test func aNewStreamPastTheUsersLimitClosesTheOldest() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let world = try await world(db, users: ["u1", "u2"])
            defer { Task { await world.shutdown() } }
            try await withLiveServer(world, configure: { $0.maximumStreamsPerUser = 2 }) { port, hub, _ in
                let other = try await TestStream.open(port: port, session: world.sessions["u2"]!)
                let first = try await TestStream.open(port: port, session: world.sessions["u1"]!)
                let second = try await TestStream.open(port: port, session: world.sessions["u1"]!)
                let third = try await TestStream.open(port: port, session: world.sessions["u1"]!)
                let (_, code, reason) = try await first.drainUntilClosed()
                #expect(code == 1008)
                #expect(reason == "too many streams")
                let key = try await userKey(world, "u1")
                try await waitUntil("the hub to hold two streams of u1") { hub.connections(of: key).count == 2 }
                try await world.send("still here", to: ["u1", "u2"])
                for stream in [second, third, other] {
                    #expect(try await stream.next(type: "notification.created")["channel_url"] as? String == "feed")
                }
                for stream in [second, third, other] { await stream.close() }
            }
        }
    }
}
