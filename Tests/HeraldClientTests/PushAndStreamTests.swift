import Foundation
import HeraldTesting
import NIOHTTP1
import Testing

@testable import HeraldClient

extension ClientSuites {
    /// The client's push and live duties, against a real `herald serve` and the mock APNs: a refresh push
    /// handed to `handleRemoteNotification` brings the change and lets the server push again; an alert
    /// push's receipt from the extension helper counts as delivered; the stream applies events live and
    /// survives the server being killed and restarted; a refused session asks the provider once.
    @Suite("Client push and stream")
    @MainActor
    struct PushAndStreamTests {
        static let deviceBytes = Data((0..<32).map { UInt8($0 * 7 & 0xFF) })
        static var deviceHex: String { deviceBytes.map { String(format: "%02x", $0) }.joined() }

        /// The pushes the mock received for the test device, as the `userInfo` iOS would hand the app.
        func pushes(_ world: ServerWorld) -> [[AnyHashable: Any]] {
            world.mock.requests.filter { $0.deviceToken == Self.deviceHex && $0.status == 200 }.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any]
            }
        }

        @Test func aRefreshPushBringsTheChangeAndTheNextChangePushesAgain() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1")
                try await client.registerDevice(token: Self.deviceBytes, environment: .sandbox, topic: ServerWorld.topic)
                #expect(client.deviceToken == Self.deviceHex)
                let collection = await client.collection(channelURL: "feed")
                try await collection.refresh()
                #expect(collection.notifications.isEmpty)

                let first = try await world.send("first", to: ["u1"])
                try await eventually("the refresh push") { pushes(world).count == 1 }
                let push = try #require(pushes(world).first)
                #expect((push["aps"] as? [String: Any])?["content-available"] as? Int == 1)
                #expect(await client.handleRemoteNotification(push) == .newData)
                #expect(collection.notifications.map(\.id) == [first])
                #expect(client.channels.feed.map(\.id) == ["feed"])

                // The sync named the device, so the next change pushes it again (no push is outstanding).
                let second = try await world.send("second", to: ["u1"])
                try await eventually("a second refresh push") { pushes(world).count == 2 }
                #expect(await client.handleRemoteNotification(pushes(world)[1]) == .newData)
                #expect(collection.notifications.map(\.id) == [second, first])
                // Nothing new: no data; not Herald's push: no data, and nothing asked of the server.
                #expect(await client.handleRemoteNotification(pushes(world)[1]) == .noData)
                #expect(await client.handleRemoteNotification(["aps": ["content-available": 1]]) == .noData)

                // Unregistered (signing out): the device is gone from the user's list.
                try await client.unregisterDevice()
                #expect(client.deviceToken == nil)
                let listed = try await world.call(.GET, "/v1/me/devices", bearer: world.sessions["u1"])
                #expect((listed["devices"] as? [Any])?.isEmpty == true)

                // A refresh that cannot reach the server fails, as iOS should be told.
                world.kill()
                #expect(await client.handleRemoteNotification(pushes(world)[1]) == .failed)
            }
        }

        @Test func theExtensionsReceiptCountsTheAlertAsDelivered() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1")
                try await client.registerDevice(token: Self.deviceBytes, environment: .sandbox, topic: ServerWorld.topic)
                let id = try await world.send("hello", to: ["u1"], channel: "chat", alert: true)
                try await eventually("the alert push") {
                    world.mock.requests.contains { $0.deviceToken == Self.deviceHex && $0.headers["apns-push-type"] == "alert" }
                }
                let alert = try #require(world.mock.requests.first { $0.headers["apns-push-type"] == "alert" })
                let userInfo = try #require(try JSONSerialization.jsonObject(with: Data(alert.body)) as? [String: Any])
                let updated = try await DeliveryReceipt.post(
                    userInfo: userInfo,
                    serverURL: world.serverURL,
                    sessionToken: try #require(world.sessions["u1"])
                )
                #expect(updated == [id])
                let view = try await world.admin(.GET, "/v1/notifications/\(id)")
                #expect((view["counts"] as? [String: Any])?["delivered"] as? Int == 1)
                // The same receipt again changes nothing; a push that is not Herald's posts nothing.
                #expect(
                    try await DeliveryReceipt.post(userInfo: userInfo, serverURL: world.serverURL, sessionToken: try #require(world.sessions["u1"]))
                        == []
                )
                #expect(try await DeliveryReceipt.post(userInfo: ["aps": ["alert": "x"]], serverURL: world.serverURL, sessionToken: "none") == [])
                // A server that does not answer in time: the helper gives up at its deadline.
                world.kill()
                await #expect(throws: (any Error).self) {
                    try await DeliveryReceipt.post(userInfo: userInfo, serverURL: world.serverURL, sessionToken: "x", timeout: .seconds(2))
                }
            }
        }

        @Test func theStreamAppliesEventsLiveAndReconnectsAfterARestart() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1")
                let collection = await client.collection(channelURL: "feed")
                try await collection.refresh()
                client.connect()
                try await eventually("the stream to open") { client.connectionState == .connected }

                let live = try await world.send("live", to: ["u1"])
                try await eventually("the event to reach the collection") { collection.notifications.first?.id == live }
                #expect(collection.state.unreadCount == 1 && client.unread.byChannel["feed"] == 1)
                try await world.admin(.PATCH, "/v1/notifications/\(live)", #"{"variables":{"title":"edited live"}}"#)
                try await eventually("the edit") { collection.notifications.first?.data["title"]?.stringValue == "edited live" }
                try await world.admin(.DELETE, "/v1/notifications/\(live)")
                try await eventually("the deletion") { collection.notifications.isEmpty }

                // Killed: the stream drops and waits to reconnect; what is sent after the restart arrives
                // once it is back, through the sync every reopening makes.
                world.kill()
                try await eventually("the drop to be noticed") { client.connectionState != .connected }
                try await world.restart()
                let afterRestart = try await world.send("after restart", to: ["u1"])
                try await eventually("the stream to reopen") { client.connectionState == .connected }
                try await eventually("the notification sent while away") { collection.notifications.first?.id == afterRestart }
                let fresh = try await world.client("u1")
                let truth = await fresh.collection(channelURL: "feed")
                try await truth.refresh()
                #expect(collection.notifications == truth.notifications)

                await client.disconnect()
                #expect(client.connectionState == .disconnected)
            }
        }

        /// A send committed just before the stream is ready comes as no event, and while a transaction
        /// elsewhere in the cluster is open every sync's answer stops below it: the client syncs again
        /// until its answers pass the `ready` event's position, so the send arrives once that
        /// transaction ends — with no further event or refresh to prompt it.
        @Test func aSendHeldBackFromTheReadySyncArrivesOnceTheHorizonPasses() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1")
                let collection = await client.collection(channelURL: "feed")
                try await collection.refresh()
                let loaded = collection.token
                // A transaction after the load, so the held one's id is above the load's horizon and
                // the next sync's token differs from the load's.
                _ = try await world.send("for someone else", to: ["u2"])
                let held = try await HeldTransaction.open(on: world.database)
                do {
                    let sent = try await world.send("held back", to: ["u1"])
                    client.connect()
                    try await eventually("the stream to open") { client.connectionState == .connected }
                    try await eventually("the sync the stream's opening makes") { collection.token != loaded }
                    #expect(!collection.notifications.contains { $0.id == sent }, "the open transaction did not hold the sync back")
                    try await held.end()
                    try await eventually("the held-back send") { collection.notifications.contains { $0.id == sent } }
                } catch {
                    try? await held.end()
                    throw error
                }
                await client.disconnect()
            }
        }

        /// The stream names its device the same ways a sync does: `Herald-Device` or `?device=`; a
        /// malformed name is a 400 and a device that is not the caller's a 404, answered to the upgrade.
        @Test func theStreamRefusesADeviceItCannotName() async throws {
            try await ServerWorld.with { world in
                let session = try #require(world.sessions["u1"])
                let handshake =
                    "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13"
                for (path, header, status, code) in [
                    ("/v1/me/stream", "Herald-Device: zz\r\n", 400, "invalid_device"),
                    ("/v1/me/stream?device=%2B1", "", 400, "invalid_device"),
                    ("/v1/me/stream", "Herald-Device: \(String(repeating: "ab", count: 32))\r\n", 404, "device_not_found"),
                    ("/v1/me/stream?device=999", "", 404, "device_not_found"),
                ] {
                    let request = "GET \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(session)\r\n\(header)\(handshake)\r\n\r\n"
                    let outcome = try await RawHTTPExchange.send(Array(request.utf8), port: world.port)
                    #expect(outcome.response.hasPrefix("HTTP/1.1 \(status)"), "\(path) \(header): \(outcome.response.prefix(300))")
                    #expect(outcome.response.contains(#"{"error":{"code":"\#(code)","#))
                }
                // Named by its token in the header, the caller's own device is accepted.
                let client = try await world.client("u1")
                try await client.registerDevice(token: Self.deviceBytes, environment: .sandbox, topic: ServerWorld.topic)
                client.connect()
                try await eventually("the stream to open with the device named") { client.connectionState == .connected }
                await client.disconnect()
            }
        }

        @Test func aRefusedSessionAsksTheProviderOnceThenFails() async throws {
            try await ServerWorld.with { world in
                let asked = AskCounter()
                let provider: @Sendable () async throws -> String = {
                    await asked.increment()
                    return try await world.newSession(for: "u1")
                }
                let client = try await world.client("u1", tokenProvider: provider)
                let collection = await client.collection(channelURL: "feed")
                try await collection.refresh()
                // Revoked: the next call gets a fresh session from the provider, once, and goes on.
                try await world.admin(.DELETE, "/v1/users/u1/sessions")
                try await world.send("after revoke", to: ["u1"])
                try await collection.refresh()
                #expect(await asked.count == 1)
                #expect(collection.notifications.count == 1)

                // A provider that fails: the call fails as unauthorized, and the stream stays closed.
                let refused = try await world.client("u2", tokenProvider: { throw HeraldClientError.unauthorized })
                try await world.admin(.DELETE, "/v1/users/u2/sessions")
                let other = await refused.collection(channelURL: "feed")
                await #expect(throws: HeraldClientError.unauthorized) { try await other.refresh() }
                refused.connect()
                try await eventually("the stream to give up") { refused.connectionState == .failed(.unauthorized) }
            }
        }
    }
}

actor AskCounter {
    private(set) var count = 0

    func increment() {
        count += 1
    }
}
