import Foundation
import HeraldTesting
import NIOHTTP1
import Testing

@testable import HeraldClient

extension ClientSuites {
    /// Users signing in and out of one client, its caches, its device and session tokens.
    @Suite("Client accounts and devices")
    @MainActor
    struct AccountTests {
        static let deviceBytes = Data((0..<32).map { UInt8(255 - $0 * 5 & 0xFF) })
        static var deviceHex: String { deviceBytes.map { String(format: "%02x", $0) }.joined() }

        func devices(_ world: ServerWorld, of user: String) async throws -> [String] {
            let listed = try await world.call(.GET, "/v1/me/devices", bearer: world.sessions[user])
            return (listed["devices"] as? [[String: Any]] ?? []).compactMap { $0["device_token"] as? String }
        }

        /// Signing out unregisters the device, forgets everything of the user and deletes their cache;
        /// the next user on the same client sees nothing of the first, and the APNs token the app
        /// handed over is registered for them.
        @Test func afterSignOutTheNextUserSeesNothingOfTheFirst() async throws {
            try await ServerWorld.with { world in
                let directory = CacheDirectory()
                defer { directory.remove() }
                let client = try await world.client("u1", cache: directory.url)
                try await client.registerDevice(token: Self.deviceBytes, environment: .sandbox, topic: ServerWorld.topic)
                try await world.send("for u1 only", to: ["u1"])
                let feed = await client.collection(channelURL: "feed")
                try await client.refreshAll()
                #expect(feed.notifications.count == 1 && client.unread.total == 1 && client.channels.feed.count == 1)
                let u1Cache = try #require(client.configuration.cacheURL(for: "u1"))
                #expect(FileManager.default.fileExists(atPath: u1Cache.path))
                #expect(try await devices(world, of: "u1") == [Self.deviceHex])

                await client.signOut()
                #expect(client.userID == nil && client.deviceToken == nil)
                #expect(feed.notifications.isEmpty && client.openCollections.isEmpty)
                #expect(client.channels.feed.isEmpty && client.channels.chat.isEmpty && client.unread == UnreadCounts())
                #expect(!FileManager.default.fileExists(atPath: u1Cache.path))
                #expect(try await devices(world, of: "u1").isEmpty)
                await #expect(throws: HeraldClientError.signedOut) { try await feed.refresh() }

                try await world.send("for u2", to: ["u2"])
                await client.signIn(userID: "u2", sessionToken: try #require(world.sessions["u2"]))
                let u2Feed = await client.collection(channelURL: "feed")
                #expect(u2Feed !== feed && u2Feed.notifications.isEmpty)
                try await client.refreshAll()
                #expect(u2Feed.notifications.map { $0.data["title"]?.stringValue } == ["for u2"])
                #expect(feed.notifications.isEmpty)
                #expect(client.deviceToken == Self.deviceHex)
                #expect(try await devices(world, of: "u2") == [Self.deviceHex])

                // A cold start as u2 shows u2's cache, never u1's.
                let again = try await world.client("u2", cache: directory.url)
                let cached = await again.collection(channelURL: "feed")
                #expect(cached.notifications.map { $0.data["title"]?.stringValue } == ["for u2"])
            }
        }

        /// A sign-in asked for while a sign-out is under way (and a `connect()` from the foreground in
        /// between) waits for it: the second user ends signed in with their own cache and a stream, the
        /// first user's cache is gone, and nothing of the first is shown.
        @Test func aSignInDuringASignOutWaitsForIt() async throws {
            try await ServerWorld.with { world in
                let directory = CacheDirectory()
                defer { directory.remove() }
                let client = try await world.client("u1", cache: directory.url)
                try await world.send("for u1", to: ["u1"])
                let feed = await client.collection(channelURL: "feed")
                try await feed.refresh()
                client.connect()
                try await eventually("the stream to open") { client.connectionState == .connected }

                let out = Task { await client.signOut() }
                try await eventually("the sign-out to be under way") { client.userID == nil }
                let into = Task { await client.signIn(userID: "u2", sessionToken: try #require(world.sessions["u2"])) }
                client.connect()
                await out.value
                try await into.value
                #expect(client.userID == "u2")
                let u1Cache = try #require(client.configuration.cacheURL(for: "u1"))
                let u2Cache = try #require(client.configuration.cacheURL(for: "u2"))
                #expect(!FileManager.default.fileExists(atPath: u1Cache.path) && FileManager.default.fileExists(atPath: u2Cache.path))
                #expect(feed.notifications.isEmpty)
                try await eventually("u2's stream") { client.connectionState == .connected }
                let u2Feed = await client.collection(channelURL: "feed")
                try await u2Feed.refresh()
                #expect(u2Feed.notifications.isEmpty && client.unread.total == 0)
                await client.disconnect()
            }
        }

        /// Two ids that differ only in case have caches of their own (a file system that ignores case
        /// would otherwise give them one file).
        @Test func idsDifferingInCaseHaveTheirOwnCaches() {
            let configuration = HeraldClient.Configuration(serverURL: URL(string: "http://x")!, cacheDirectory: URL(fileURLWithPath: "/tmp/c"))
            let upper = configuration.cacheURL(for: "Alice")!.lastPathComponent.lowercased()
            let lower = configuration.cacheURL(for: "alice")!.lastPathComponent.lowercased()
            #expect(upper != lower)
            #expect(configuration.cacheURL(for: "a/b")!.deletingLastPathComponent().path == "/tmp/c")
        }

        /// An APNs token handed over before anyone signed in is held, and registered at sign-in.
        @Test func aTokenBeforeSignInIsRegisteredAtSignIn() async throws {
            try await ServerWorld.with { world in
                let client = HeraldClient(configuration: world.configuration())
                try await client.registerDevice(token: Self.deviceBytes, environment: .sandbox, topic: ServerWorld.topic)
                #expect(client.deviceToken == nil)
                #expect(try await devices(world, of: "u1").isEmpty)
                await client.signIn(userID: "u1", sessionToken: try #require(world.sessions["u1"]))
                #expect(client.deviceToken == Self.deviceHex)
                #expect(try await devices(world, of: "u1") == [Self.deviceHex])
            }
        }

        /// A cache that cannot be opened (here its directory cannot be made: a file is in the way)
        /// leaves the client working without one, and says so in the log.
        @Test func aCacheThatCannotOpenDegradesToNone() async throws {
            try await ServerWorld.with { world in
                let blocker = FileManager.default.temporaryDirectory.appendingPathComponent("herald-not-a-directory-\(UUID().uuidString)")
                try Data("x".utf8).write(to: blocker)
                defer { try? FileManager.default.removeItem(at: blocker) }
                let log = LogRecorder()
                let client = try await world.client("u1", cache: blocker.appendingPathComponent("caches")) { $0.logHandler = log.handler }
                #expect(client.cache == nil)
                #expect(log.contains(.warning, "cache could not be opened"))
                try await world.send("still works", to: ["u1"])
                let feed = await client.collection(channelURL: "feed")
                try await feed.refresh()
                #expect(feed.notifications.count == 1)
            }
        }

        /// The server removed the device (APNs said the token is gone, or a backup was restored onto
        /// another phone): the request that met `device_not_found` goes through without it, the known
        /// token is registered again, the app is told, and later requests name the device again.
        @Test func aDeviceTheServerLostIsRegisteredAgain() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1")
                var events: [HeraldClient.Event] = []
                client.onEvent = { events.append($0) }
                try await client.registerDevice(token: Self.deviceBytes, environment: .sandbox, topic: ServerWorld.topic)
                let feed = await client.collection(channelURL: "feed")
                try await feed.refresh()
                try await world.call(.DELETE, "/v1/me/devices/\(Self.deviceHex)", bearer: world.sessions["u1"])
                #expect(try await devices(world, of: "u1").isEmpty)

                try await world.send("after the removal", to: ["u1"])
                try await feed.refresh()
                #expect(feed.notifications.count == 1)
                #expect(events == [.deviceNotFound(reregistered: true)])
                #expect(try await devices(world, of: "u1") == [Self.deviceHex])
                #expect(client.deviceToken == Self.deviceHex)

                // Without a token to register again (the app never handed one to this run), the device
                // is dropped from requests, which go on working.
                let restored = try await world.client("u1")
                restored.deviceToken = "ab" + String(repeating: "0", count: 62)
                var told: [HeraldClient.Event] = []
                restored.onEvent = { told.append($0) }
                try await restored.channels.refresh()
                #expect(restored.deviceToken == nil && told == [.deviceNotFound(reregistered: false)])
                restored.connect()
                try await eventually("the stream without a device") { restored.connectionState == .connected }
                await restored.disconnect()
            }
        }

        /// A session token handed in replaces the refused one without a new client, and a stream that
        /// had failed on it opens again.
        @Test func aNewSessionTokenNeedsNoNewClient() async throws {
            try await ServerWorld.with { world in
                var events: [HeraldClient.Event] = []
                let client = try await world.client("u1")
                client.onEvent = { events.append($0) }
                let feed = await client.collection(channelURL: "feed")
                try await feed.refresh()
                try await world.admin(.DELETE, "/v1/users/u1/sessions")
                await #expect(throws: HeraldClientError.unauthorized) { try await feed.refresh() }
                client.connect()
                try await eventually("the stream to fail") { client.connectionState == .failed(.unauthorized) }
                #expect(events == [.sessionRefused])

                await client.updateSessionToken(try await world.newSession(for: "u1"))
                try await eventually("the stream with the new session") { client.connectionState == .connected }
                try await world.send("with the new session", to: ["u1"])
                // A sync answers what is below its snapshot's horizon: a write the server began before
                // the send (the stream's own, on connecting) may hold it back for a moment.
                try await eventually("the send, synced with the new session") {
                    try await feed.refresh()
                    return feed.notifications.count == 1
                }
                await client.disconnect()
            }
        }
    }
}
