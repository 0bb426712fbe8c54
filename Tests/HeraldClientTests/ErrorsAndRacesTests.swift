import Foundation
import HeraldTesting
import NIOHTTP1
import Testing

@testable import HeraldClient

extension ClientSuites {
    /// Typed errors, rate limits and load, and the races of the main actor: answers that arrive after
    /// what they belonged to changed.
    @Suite("Client errors, limits and races")
    @MainActor
    struct ErrorsAndRacesTests {
        /// A `429` is `rateLimited` with its `Retry-After`; the client's own refreshes wait it out and
        /// try again, sending nothing meanwhile.
        @Test func retryAfterIsHonoured() async throws {
            // Two requests at once, then one a second.
            try await ServerWorld.with(settings: ["HERALD_RATE_LIMIT_SESSION": "1/2"]) { world in
                let log = LogRecorder()
                let watch = RequestWatch()
                let client = try await world.client("u1") {
                    $0.logHandler = log.handler
                    $0.middlewares = [watch]
                    $0.rateLimitRetries = 10
                }
                let feed = await client.collection(channelURL: "feed")
                _ = try? await feed.refresh()
                _ = try? await feed.refresh()
                do {
                    try await feed.refresh()
                    Issue.record("the third request within the burst was not refused")
                } catch HeraldClientError.rateLimited(let retryAfter) {
                    #expect(retryAfter >= .seconds(1))
                }

                // A push's refresh (the collection, the list, the counts) meets the limit and waits.
                try await world.send("limited", to: ["u1"])
                let push: [AnyHashable: Any] = [
                    "aps": ["content-available": 1],
                    "herald": ["type": "refresh", "channels": [["channel_url": "feed", "unread_count": 1]], "badge": 1],
                ]
                let before = log.entries.count
                #expect(await client.handleRemoteNotification(push) == .newData)
                #expect(feed.notifications.count == 1)
                let entries = log.entries
                let refusals = entries.indices.filter {
                    $0 >= before && entries[$0].message.hasPrefix("answer") && entries[$0].message.hasSuffix(" 429")
                }
                #expect(!refusals.isEmpty)
                for index in refusals {
                    // The refused request goes again no sooner than a second after its refusal.
                    let operation = entries[index].message.split(separator: " ")[1]
                    if let next = entries[(index + 1)...].first(where: { $0.message.hasPrefix("request \(operation) ") }) {
                        #expect(next.at - entries[index].at >= .milliseconds(990), "\(next.message) after \(entries[index].message)")
                    }
                }
            }
        }

        /// `refreshAll` keeps at most `maximumConcurrentRefreshes` requests in flight.
        @Test func refreshAllBoundsItsConcurrency() async throws {
            try await ServerWorld.with { world in
                let watch = RequestWatch()
                let client = try await world.client("u1") {
                    $0.middlewares = [watch]
                    $0.maximumConcurrentRefreshes = 2
                }
                for index in 0..<8 {
                    try await world.admin(.PUT, "/v1/channels/room\(index)", #"{"kind":"chat","name":"Room \#(index)"}"#)
                    try await world.send("hello \(index)", to: ["u1"], channel: "room\(index)")
                    _ = await client.collection(channelURL: "room\(index)")
                }
                #expect(try await client.refreshAll())
                #expect(watch.count("syncCollection") == 8)
                #expect(watch.mostInFlight == 2)
                #expect(client.openCollections.allSatisfy { $0.notifications.count == 1 })
            }
        }

        /// What the network throws is a typed error.
        @Test func transportFailuresAreTyped() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1")
                let feed = await client.collection(channelURL: "feed")
                world.kill()
                do {
                    try await feed.refresh()
                    Issue.record("a refresh against a dead server succeeded")
                } catch let error as HeraldClientError {
                    guard case .transport = error else {
                        Issue.record("not a transport error: \(error)")
                        return
                    }
                    #expect(error.isTransient)
                }
            }
        }

        /// An older page asked for before a reload is dropped when it comes: it continued the old
        /// cursor, and adding it to the reloaded newest page would leave a gap that paging never fills.
        @Test func anOlderPageOverlappingAReloadLeavesNoGap() async throws {
            try await ServerWorld.with { world in
                let watch = RequestWatch()
                let client = try await world.client("u1") { $0.middlewares = [watch] }
                for index in 0..<20 { try await world.send("old \(index)", to: ["u1"]) }
                let feed = await client.collection(channelURL: "feed")
                feed.pageSize = 5
                try await feed.refresh()
                #expect(feed.notifications.count == 5 && feed.hasPrevious)

                watch.hold("olderNotifications")
                let older = Task { try await feed.loadPrevious() }
                try await eventually("the older page to be asked for") { watch.waitingCount == 1 }
                for index in 0..<10 { try await world.send("new \(index)", to: ["u1"]) }
                try await feed.reload()
                watch.release("olderNotifications")
                try await older.value

                // Paged to the end, the collection is the whole channel, in order, without a hole.
                while feed.hasPrevious { try await feed.loadPrevious() }
                let truth = try await world.client("u1")
                let whole = await truth.collection(channelURL: "feed")
                whole.pageSize = 100
                try await whole.refresh()
                #expect(feed.notifications.map(\.id) == whole.notifications.map(\.id))
                #expect(feed.notifications.count == 30)
            }
        }

        /// What the cache holds never overwrites what a sync brought: the client keeps a collection out
        /// of reach of refreshes until its cached state is in, two callers share one restore, and a
        /// restore that comes after a load (the race this guards against) changes nothing.
        @Test func aCacheRestoreNeverOverwritesARefresh() async throws {
            try await ServerWorld.with { world in
                let directory = CacheDirectory()
                defer { directory.remove() }
                try await world.send("cached", to: ["u1"])
                do {
                    let first = try await world.client("u1", cache: directory.url)
                    try await (await first.collection(channelURL: "feed")).refresh()
                }
                try await world.send("newer", to: ["u1"])
                let client = try await world.client("u1", cache: directory.url)
                async let one = client.collection(channelURL: "feed")
                async let refreshed: Bool = client.refreshAll()
                async let two = client.collection(channelURL: "feed")
                let (a, b) = await (one, two)
                _ = try await refreshed
                #expect(a === b && client.openCollections.count == 1)

                // A collection loaded while its cached state (older: the cache is left out of this
                // load) was still being read: the late restore leaves the newer state alone.
                let cache = try #require(client.cache)
                let late = NotificationCollection(channelURL: "feed", category: nil, client: client)
                client.cache = nil
                try await late.refresh()
                client.cache = cache
                #expect(late.notifications.map { $0.data["title"]?.stringValue } == ["newer", "cached"])
                await cache.restore(late)
                #expect(late.notifications.map { $0.data["title"]?.stringValue } == ["newer", "cached"])
            }
        }
    }
}
