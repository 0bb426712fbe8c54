import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres
import Testing

@testable import HeraldServer
@testable import HeraldServices

/// Alert pushes end to end against the mock APNs: preferences decide, the silent refresh goes
/// regardless, options travel into headers and payloads.
extension PushTests {
    func alerts(_ world: World) -> [MockAPNsServer.Request] {
        world.mock.requests.filter { $0.headers["apns-push-type"] == "alert" }
    }

    func payload(_ request: MockAPNsServer.Request) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
    }

    func key(_ world: World, _ user: String) async throws -> Int64 {
        try #require(try await UserStore(client: world.db.client).key(user))
    }

    @Test func aUserInDoNotDisturbGetsTheRefreshButNoAlert() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let (quiet, open) = (Self.token(1), Self.token(2))
            let world = try await world(db, devices: ["u1": [quiet], "u2": [open]])
            defer { Task { await world.shutdown() } }
            var dnd = PushPreferences()
            dnd.doNotDisturb = .init(start: .init(hour: 0, minute: 0), end: .init(hour: 23, minute: 59))
            try await PushPreferenceStore(client: db.client).put(userKey: try await key(world, "u1"), dnd)
            _ = try await world.query("UPDATE users SET nickname = 'Shop' WHERE id = 'u2'")

            var options = PushOptions()
            options.alert = true
            options.senderID = "u2"
            let id = try await world.send("Your order shipped", to: ["u1", "u2"], push: options)
            try await world.drain()

            // Both devices get their silent refresh; only u2's gets the alert.
            let refreshed = world.mock.requests.filter { $0.headers["apns-push-type"] == "background" }.map(\.deviceToken)
            #expect(Set(refreshed) == [quiet, open])
            let alerts = alerts(world)
            #expect(alerts.map(\.deviceToken) == [open])
            let alert = try #require(alerts.first)
            #expect(alert.status == 200)
            #expect(alert.headers["apns-priority"] == "10")
            #expect(alert.headers["apns-topic"] == Self.topic)
            #expect(alert.headers["apns-collapse-id"] == nil)
            let body = try payload(alert)
            let aps = try #require(body["aps"] as? [String: Any])
            #expect((aps["alert"] as? [String: String])?["body"] == "Shop: Your order shipped")
            #expect(aps["sound"] as? String == "default")
            #expect(aps["badge"] as? Int == 1)  // u2's true unread total
            let herald = try #require(body["herald"] as? [String: Any])
            #expect(herald["message_id"] as? Int == Int(id))
            #expect((herald["sender"] as? [String: Any])?["id"] as? String == "u2")
            #expect((herald["recipient"] as? [String: Any])?["id"] as? String == "u2")
            #expect((herald["channel"] as? [String: Any])?["channel_url"] as? String == "feed")
            #expect(herald["type"] as? String == "MESG")
            // The alert counts as a push of the notification, beside the two refreshes.
            #expect(try await world.query("SELECT pushes_sent FROM notifications WHERE id = \(id)")[0].decode(Int64.self) == 3)
        }
    }

    @Test func forcePushGetsPastSnoozeDoNotDisturbAndTriggerOff() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let device = Self.token(1)
            let world = try await world(db, devices: ["u1": [device]])
            defer { Task { await world.shutdown() } }
            var quiet = PushPreferences()
            quiet.triggerOption = .off
            quiet.doNotDisturb = .init(start: .init(hour: 0, minute: 0), end: .init(hour: 23, minute: 59))
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            quiet.snooze = .init(start: now - 60_000, end: now + 3_600_000)
            try await PushPreferenceStore(client: db.client).put(userKey: try await key(world, "u1"), quiet)

            var options = PushOptions()
            options.alert = true
            try await world.send("not forced", to: ["u1"], push: options)
            try await world.drain()
            #expect(alerts(world).isEmpty)

            options.forcePush = ["u1"]
            options.text = "Your flight boards now"
            try await world.send("forced", to: ["u1"], push: options)
            try await world.drain()
            let alert = try #require(alerts(world).first)
            #expect(alerts(world).count == 1)
            #expect(((try payload(alert)["aps"] as? [String: Any])?["alert"] as? [String: String])?["body"] == "Your flight boards now")
        }
    }

    @Test func collapseIDPrioritySoundCustomKeysAndTheBadgeTravel() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let device = Self.token(1)
            let world = try await world(db, devices: ["u1": [device]]) { $0.badgeCap = 2 }
            defer { Task { await world.shutdown() } }
            var sound = PushPreferences()
            sound.sound = "user.caf"
            try await PushPreferenceStore(client: db.client).put(userKey: try await key(world, "u1"), sound)

            // Earlier unread notifications: two counted, one not.
            var uncounted = PushOptions()
            uncounted.countedInBadge = false
            try await world.send("a", to: ["u1"])
            try await world.send("b", to: ["u1"])
            try await world.send("c", to: ["u1"], push: uncounted)

            var options = PushOptions()
            options.alert = true
            options.collapseID = "order-42"
            options.priority = .low
            options.custom = ["deep_link": .string("app://orders/42")]
            options.aps = ["thread-id": .string("orders")]
            options.noDetail = true
            try await world.send("secret", to: ["u1"], push: options)
            try await world.drain()
            let alert = try #require(alerts(world).first)
            #expect(alert.headers["apns-collapse-id"] == "order-42")
            #expect(alert.headers["apns-priority"] == "5")
            let body = try payload(alert)
            #expect(body["deep_link"] as? String == "app://orders/42")
            let aps = try #require(body["aps"] as? [String: Any])
            #expect(aps["thread-id"] as? String == "orders")
            #expect(aps["sound"] as? String == "user.caf")  // the user's sound when the notification names none
            #expect((aps["alert"] as? [String: String]) == ["body": "You have a new notification"])  // no_detail
            // 4 unread, one of them not counted: 3, capped at 2.
            #expect(aps["badge"] as? Int == 2)
            #expect((body["herald"] as? [String: Any])?["unread_message_count"] as? Int == 3)
        }
    }

    @Test func channelOptionsAndMentionOnlyDecideWhoIsAlerted() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let (muted, mentions) = (Self.token(1), Self.token(2))
            let world = try await world(db, devices: ["u1": [muted], "u2": [mentions]])
            defer { Task { await world.shutdown() } }
            let preferences = PushPreferenceStore(client: db.client)
            let channel = try #require(try await CollectionStore(client: db.client).channel("feed"))
            try await preferences.setChannelOption(userKey: try await key(world, "u1"), channelKey: channel.key, .off)
            var mentionOnly = PushPreferences()
            mentionOnly.triggerOption = .mentionOnly
            try await preferences.put(userKey: try await key(world, "u2"), mentionOnly)

            var options = PushOptions()
            options.alert = true
            try await world.send("no mention", to: ["u1", "u2"], push: options)
            try await world.drain()
            #expect(alerts(world).isEmpty)
            options.mentionedUserIDs = ["u1", "u2"]
            try await world.send("mentions both", to: ["u1", "u2"], push: options)
            try await world.drain()
            #expect(alerts(world).map(\.deviceToken) == [mentions])  // u1's channel is off, mention or not
        }
    }

    @Test func aDeadTokenOnAnAlertIsRemovedAndListed() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let device = Self.token(1)
            let world = try await world(db, users: ["u1"], devices: ["u1": [device]])
            defer { Task { await world.shutdown() } }
            // The refresh goes through; the alert finds the token dead.
            world.mock.script(device, [.status(200, reason: nil), .status(400, reason: "BadDeviceToken")])
            var options = PushOptions()
            options.alert = true
            try await world.send("hello", to: ["u1"], push: options)
            try await world.drain()
            #expect(alerts(world).map(\.status) == [400])
            #expect(try await world.query("SELECT count(*) FROM devices")[0].decode(Int64.self) == 0)
            let failures = try await PushStore(client: db.client).failures(limit: 10, before: nil)
            #expect(failures.map(\.reason) == ["alert: BadDeviceToken"])
            #expect(failures.first?.tokenRemoved == true)
            #expect(try await world.query("SELECT count(*) FROM alert_pushes")[0].decode(Int64.self) == 0)
        }
    }

    @Test func anOnlineUserGetsNoAlert() async throws {
        try await TestPostgres.withDatabase(cluster: .push) { (db: TestDatabase) async throws in
            let device = Self.token(1)
            let world = try await world(db, users: ["u1"], devices: ["u1": [device]])
            defer { Task { await world.shutdown() } }
            try await withLiveServer(world) { port, _, _ in
                let stream = try await TestStream.open(port: port, session: world.sessions["u1"]!, device: device)
                var options = PushOptions()
                options.alert = true
                try await world.send("live", to: ["u1"], push: options)
                _ = try await stream.next(type: "notification.created")
                try await world.drain()
                #expect(world.mock.requests.isEmpty)
                #expect(try await world.query("SELECT count(*) FROM alert_pushes")[0].decode(Int64.self) == 0)  // dropped, not kept
                await stream.close()
            }
        }
    }
}
