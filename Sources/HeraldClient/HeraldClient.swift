import Foundation
public import Observation

/// The app's connection to a Herald server, for one signed-in user: the collections it keeps in step,
/// the channel list, unread counts and badge, the device that receives silent pushes, and the live
/// stream while the app is in the foreground.
///
/// ```swift
/// let herald = try await HeraldClient(configuration: .init(serverURL: url, sessionToken: token))
/// let orders = herald.collection(channelURL: "orders")
/// try await orders.refresh()
/// ```
///
/// Everything the app reads is `@Observable` and lives on the main actor.
@MainActor
@Observable
public final class HeraldClient {
    /// The user's channels, kept by their change log.
    public let channels: ChannelList
    /// The user's total unread count and each channel's, as of the last answer that carried them.
    public internal(set) var unread = UnreadCounts()
    /// The live stream's state.
    public internal(set) var connectionState: ConnectionState = .disconnected
    /// The APNs token of this device once registered (hex).
    public internal(set) var deviceToken: String?

    @ObservationIgnored let configuration: Configuration
    @ObservationIgnored let api: HeraldAPI
    @ObservationIgnored let cache: HeraldCache?
    @ObservationIgnored var collections: [CollectionKey: NotificationCollection] = [:]
    @ObservationIgnored var stream: Task<Void, Never>?
    /// Refreshes the stream started (on `ready`, `resync`, `channel.read`), which outlive it.
    @ObservationIgnored var streamRefreshes: [Int: Task<Void, Never>] = [:]
    @ObservationIgnored var nextStreamRefresh = 0
    /// The position of the change each channel's unread count came with (`noteUnread`).
    @ObservationIgnored var unreadPositions: [String: Int64] = [:]

    /// Opens the client; with a cache, restores what the last run saved (collections come back with
    /// their tokens, so they resume where they were, even offline).
    public init(configuration: Configuration) async throws {
        self.configuration = configuration
        let credentials = SessionCredentials(token: configuration.sessionToken, provider: configuration.tokenProvider)
        api = HeraldAPI(serverURL: configuration.serverURL, credentials: credentials)
        cache = try configuration.cacheURL.map { try HeraldCache(url: $0) }
        channels = ChannelList()
        channels.client = self
        if let cache {
            let saved = try await cache.loadMeta()
            deviceToken = saved.deviceToken
            if let unread = saved.unread { self.unread = unread }
            if let list = saved.channelList { channels.restore(list) }
        }
    }

    /// The collection of `channelURL` (of one `category`, when given): the same object for as long as
    /// it is not disposed. From the cache when it holds one, so it shows the last state at once; call
    /// `refresh()` to bring it up to date.
    public func collection(channelURL: String, category: String? = nil) async -> NotificationCollection {
        let key = CollectionKey(channelURL: channelURL, category: category)
        if let existing = collections[key] { return existing }
        let collection = NotificationCollection(channelURL: channelURL, category: category, client: self)
        collections[key] = collection
        await cache?.restore(collection)
        return collection
    }

    /// The collections the client keeps in step (refreshed by silent pushes and the stream).
    public var openCollections: [NotificationCollection] {
        Array(collections.values)
    }

    /// Brings every open collection, the channel list and the unread counts up to date. Returns
    /// whether anything changed; throws the first failure once every refresh has ended.
    ///
    /// One failing refresh does not cancel the others: besides being wasted work, cancelling a request
    /// in flight can crash FoundationNetworking on Linux (its task registry loses the task).
    @discardableResult
    public func refreshAll() async throws -> Bool {
        let results = await withTaskGroup(of: Result<Bool, any Error>.self) { group in
            for collection in collections.values {
                group.addTask { await Self.outcome { try await collection.refresh() } }
            }
            group.addTask { await Self.outcome { try await self.channels.refresh() } }
            var results: [Result<Bool, any Error>] = []
            for await result in group { results.append(result) }
            return results
        }
        await refreshUnread()
        return try results.reduce(false) { changed, result in try result.get() || changed }
    }

    /// What `work` returned or threw.
    static func outcome<T>(_ work: () async throws -> T) async -> Result<T, any Error> {
        do {
            return .success(try await work())
        } catch {
            return .failure(error)
        }
    }

    /// Runs `work` in a task of its own and waits for it at most `deadline`: past it `late` is thrown
    /// and the work goes on to its end, uncancelled (see `refreshAll`), its outcome dropped.
    static func within<T: Sendable>(
        _ deadline: Duration,
        orThrow late: HeraldClientError,
        _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let running = Task { try await work() }
        let first = await withTaskGroup(of: Result<T, any Error>?.self) { group in
            // Cancelling this waiter (when the deadline comes first) does not cancel `running`.
            group.addTask { await running.result }
            group.addTask {
                try? await Task.sleep(for: deadline)
                return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
        guard let first else { throw late }
        return try first.get()
    }

    /// Reads the unread counts afresh (they also come with every sync and stream event).
    public func refreshUnread() async {
        guard let answer = try? await api.unread() else { return }
        // A count held from a newer position (a mark, a stream event) stays: the answer may come from
        // a read standby that has not replayed it yet.
        let horizon = Int64(answer.horizon) ?? 0
        var counts = UnreadCounts()
        var newer = false
        for channel in answer.channels {
            let url = channel.channelUrl
            if horizon >= unreadPositions[url, default: 0] {
                counts.byChannel[url] = channel.unreadCount
                unreadPositions[url] = horizon
            } else {
                counts.byChannel[url] = unread.byChannel[url] ?? channel.unreadCount
                newer = true
            }
        }
        counts.total = newer ? counts.byChannel.values.reduce(0, +) : answer.total
        unread = counts
        await cache?.saveUnread(unread)
    }

    /// The badge of a collection answer whose snapshot's horizon is `horizon`: taken unless a count
    /// held is from a newer position.
    func noteBadge(_ badge: Int, at horizon: Int64) {
        guard unread.total != badge, horizon >= unreadPositions.values.max() ?? 0 else { return }
        unread.total = badge
    }

    func forget(_ collection: NotificationCollection) {
        collections[collection.key] = nil
    }

    /// How this device names itself to the server (`Herald-Device`), once registered.
    var deviceReference: String? { deviceToken }
}

/// The user's total unread count (the badge) and each channel's.
public struct UnreadCounts: Sendable, Hashable, Codable {
    public var total: Int
    public var byChannel: [String: Int]

    public init(total: Int = 0, byChannel: [String: Int] = [:]) {
        self.total = total
        self.byChannel = byChannel
    }
}

/// The live stream's state.
public enum ConnectionState: Sendable, Equatable {
    case disconnected
    case connecting
    /// The stream is open: events arrive as they happen, and the device gets no silent pushes.
    case connected
    /// The connection dropped; the next attempt is scheduled (exponential backoff with jitter).
    case waitingToReconnect
    /// The server refused the session and the token provider gave none that works.
    case failed(HeraldClientError)
}
