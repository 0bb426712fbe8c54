import Foundation
import HeraldTesting
import NIOHTTP1
import Testing

@testable import HeraldClient

extension ClientSuites {
    /// The client through the app's life, driven by a `TestPlatform` the way UIKit and Network drive
    /// it on iOS: foreground and background flips, the network dropping and returning, observers
    /// replaced, the badge following the server's.
    @Suite("Client lifecycle")
    @MainActor
    struct LifecycleTests {
        /// A quick background → foreground flip ends in the foreground with a stream. The stream used
        /// to be cleared only after `disconnect()` had awaited it, so the `connect()` of the flip found
        /// it still set and returned: the app stayed in the foreground with no stream.
        @Test func aQuickBackgroundForegroundFlipEndsWithAStream() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1")
                let collection = await client.collection(channelURL: "feed")
                try await collection.refresh()
                client.connect()
                try await eventually("the stream to open") { client.connectionState == .connected }

                // The calls themselves: a disconnect under way, and a connect before it ends.
                let closing = Task { await client.disconnect() }
                try await eventually("the disconnect to be under way") { client.stream == nil }
                client.connect()
                await closing.value
                try await eventually("a stream after the flip") { client.connectionState == .connected }
                let live = try await world.send("after the flip", to: ["u1"])
                try await eventually("an event on the new stream") { collection.notifications.first?.id == live }

                // The same through the platform's events, flipped before the background work ran.
                let platform = TestPlatform(active: true)
                client.followLifecycle(of: platform)
                platform.send(.didEnterBackground)
                platform.send(.didBecomeActive)
                try await eventually("the background work to end") { platform.backgroundTasksOpen == 0 }
                try await eventually("the stream after the platform's flip") { client.connectionState == .connected }
                let again = try await world.send("after the second flip", to: ["u1"])
                try await eventually("an event after the platform's flip") { collection.notifications.first?.id == again }

                // A real background: the stream closes within the background time asked for.
                platform.send(.didEnterBackground)
                try await eventually("the stream to close in the background") {
                    client.connectionState == .disconnected && platform.backgroundTasksOpen == 0
                }
                #expect(platform.backgroundTasksAsked == 2)
                await client.disconnect()
            }
        }

        /// Following a second platform stops the first one's reports (its observers are removed, not
        /// doubled); coming to the foreground refreshes every collection even when the stream is
        /// already open and so brings no `ready` (and its refresh) of its own.
        @Test func observersAreReplacedAndTheForegroundAlwaysRefreshes() async throws {
            try await ServerWorld.with { world in
                let watch = RequestWatch()
                let client = try await world.client("u1") { $0.middlewares = [watch] }
                let collection = await client.collection(channelURL: "feed")
                try await collection.refresh()
                let first = TestPlatform()
                let second = TestPlatform()
                client.followLifecycle(of: first)
                client.followLifecycle(of: second)
                #expect(first.starts == 1 && first.stops == 1 && !first.isObserved)
                #expect(second.starts == 1 && second.isObserved)
                client.followLifecycle(of: second)
                #expect(second.starts == 2 && second.stops == 1)

                client.connect()
                try await eventually("the stream to open and its refresh to end") {
                    client.connectionState == .connected && client.backgroundRefreshes.isEmpty
                }
                let syncs = watch.count("syncCollection")
                second.send(.didBecomeActive)
                try await eventually("the foreground's refresh") { watch.count("syncCollection") > syncs }
                client.stopFollowingLifecycle()
                #expect(!second.isObserved)
                await client.disconnect()
            }
        }

        /// When the network returns, the stream reconnects at once instead of after its backoff, and
        /// every collection refreshes.
        @Test func theNetworkComingBackReconnectsAtOnce() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1") { configuration in
                    // A backoff far longer than the test's wait: only the network's return can beat it.
                    configuration.initialReconnectDelay = .seconds(600)
                    configuration.maximumReconnectDelay = .seconds(600)
                }
                let platform = TestPlatform(active: true)
                client.followLifecycle(of: platform)
                let collection = await client.collection(channelURL: "feed")
                try await collection.refresh()
                try await eventually("the stream to open") { client.connectionState == .connected }

                platform.send(.network(available: false))
                world.kill()
                try await eventually("the drop to be noticed") { client.connectionState == .waitingToReconnect }
                try await world.restart()
                let sent = try await world.send("while offline", to: ["u1"])
                platform.send(.network(available: true))
                try await eventually("the stream back without waiting out the backoff", timeout: .seconds(20)) {
                    client.connectionState == .connected
                }
                try await eventually("the refresh on the network's return") { collection.notifications.first?.id == sent }
                await client.disconnect()
            }
        }

        /// The app icon's badge follows the server's unread total: on following, on a sync's answer,
        /// on a stream event, on a read.
        @Test func theBadgeFollowsTheServer() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1")
                let platform = TestPlatform()
                client.followLifecycle(of: platform)
                #expect(platform.badges == [0])
                let collection = await client.collection(channelURL: "feed")
                try await world.send("one", to: ["u1"])
                try await world.send("two", to: ["u1"])
                try await collection.refresh()
                #expect(platform.badges.last == 2)
                platform.send(.didBecomeActive)
                try await eventually("the stream to open") { client.connectionState == .connected }
                try await world.send("three", to: ["u1"])
                try await eventually("the badge from the stream") { platform.badges.last == 3 }
                try await collection.markRead()
                try await eventually("the badge after the read") { platform.badges.last == 0 }
                await client.disconnect()
            }
        }
    }
}
