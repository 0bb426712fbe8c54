import Foundation
public import Observation

/// The app's connection to a Herald server: the signed-in user's collections, channel list, unread
/// counts and badge, the device that receives pushes, and the live stream while the app is in the
/// foreground.
///
/// Create one when the app starts and keep it for the app's life; users sign in and out of it:
///
/// ```swift
/// let herald = HeraldClient(configuration: .init(serverURL: url, cacheDirectory: caches))
/// await herald.signIn(userID: "alice", sessionToken: token)
/// let orders = await herald.collection(channelURL: "orders")
/// try await orders.refresh()
/// ```
///
/// Everything the app reads is `@Observable` and lives on the main actor; requests, decoding and the
/// cache's work happen off it.
@MainActor
@Observable
public final class HeraldClient {
    /// What the library tells the app about, besides the values it observes.
    public enum Event: Sendable, Equatable {
        /// The server no longer knew this device (removed after APNs said the token is gone, or the
        /// app was restored from a backup onto another phone). The library dropped it from its
        /// requests and, when it knew the APNs token, registered it again (`reregistered`).
        case deviceNotFound(reregistered: Bool)
        /// The session was refused and the token provider gave none that works: sign in again.
        case sessionRefused
    }

    /// The signed-in user's id; `nil` while nobody is signed in.
    public internal(set) var userID: String?
    /// The user's channels, kept by their change log.
    public let channels: ChannelList
    /// The user's total unread count (the app icon's badge) and each channel's, as of the last answer
    /// that carried them.
    public internal(set) var unread = UnreadCounts() {
        didSet {
            if unread.total != oldValue.total { platform?.setBadge(unread.total) }
        }
    }
    /// The live stream's state.
    public internal(set) var connectionState: ConnectionState = .disconnected
    /// The APNs token (hex) this device is registered with for the signed-in user.
    public internal(set) var deviceToken: String?

    /// Called on the main actor for each `Event`.
    @ObservationIgnored public var onEvent: (@MainActor (Event) -> Void)?

    @ObservationIgnored let configuration: Configuration
    @ObservationIgnored let log: ClientLog
    @ObservationIgnored let api: HeraldAPI
    /// The signed-in user's cache, if there is one and it opened.
    @ObservationIgnored var cache: HeraldCache?
    @ObservationIgnored var collections: [CollectionKey: NotificationCollection] = [:]
    /// Collections being restored from the cache, which a second caller of `collection(…)` waits for.
    @ObservationIgnored var restoring: [CollectionKey: Task<NotificationCollection, Never>] = [:]
    /// The last sign-in or sign-out, which the next one waits for.
    @ObservationIgnored var accountChange: Task<Void, Never>?
    /// The position of the change each channel's unread count came with (`noteUnread`).
    @ObservationIgnored var unreadPositions: [String: Int64] = [:]
    /// Counts sign-ins and sign-outs: work begun for one user finds it changed and drops its outcome.
    @ObservationIgnored var account = 0

    // The live stream (HeraldClient+Live).
    @ObservationIgnored var stream: Task<Void, Never>?
    /// Bumped by every `connect` that starts a stream and every `disconnect`: a stream whose
    /// generation is no longer current changes nothing.
    @ObservationIgnored var streamGeneration = 0
    /// Whether the app wants the stream open (between `connect()` and `disconnect()`).
    @ObservationIgnored var wantsStream = false
    /// Refreshes the library started by itself (stream, pushes, lifecycle), which outlive the stream.
    @ObservationIgnored var backgroundRefreshes: [Int: Task<Void, Never>] = [:]
    @ObservationIgnored var nextBackgroundRefresh = 0
    /// Syncs again after `ready` while answers stop below its position (`catchUp(to:generation:)`);
    /// cancelled when the stream closes.
    @ObservationIgnored var catchingUp: Task<Void, Never>?

    // The device (HeraldClient+Devices).
    /// The APNs registration the app handed over, kept across sign-ins: registered for each user who
    /// signs in, and again when the server has lost the device.
    @ObservationIgnored var apnsRegistration: APNsRegistration?
    @ObservationIgnored var reregistering: Task<Bool, Never>?

    // The platform (HeraldClient+Lifecycle).
    @ObservationIgnored var platform: (any HeraldPlatform)?
    @ObservationIgnored var networkAvailable = true

    /// A client with nobody signed in yet: `registerDevice` holds the APNs token until someone signs in.
    public init(configuration: Configuration) {
        self.configuration = configuration
        log = ClientLog(handler: configuration.logHandler)
        let credentials = SessionCredentials(token: nil, provider: configuration.tokenProvider)
        api = HeraldAPI(serverURL: configuration.serverURL, credentials: credentials, log: log, middlewares: configuration.middlewares)
        channels = ChannelList()
        channels.client = self
    }

    /// A client with `userID` signed in (see `signIn(userID:sessionToken:)`).
    public convenience init(configuration: Configuration, userID: String, sessionToken: String) async {
        self.init(configuration: configuration)
        await signIn(userID: userID, sessionToken: sessionToken)
    }

    /// The collection of `channelURL` (of one `category`, when given, and of one inbox `status`: by
    /// default everything not archived): the same object for as long as it is not disposed. From the cache when it holds one, so it shows the last state at once; call
    /// `refresh()` to bring it up to date. Empty and inert while nobody is signed in.
    public func collection(channelURL: String, category: String? = nil, status: InboxStatus = .inbox) async -> NotificationCollection {
        // A sign-in under way is opening its user's cache: the collection comes from it.
        await accountChange?.value
        let key = CollectionKey(channelURL: channelURL, category: category, status: status)
        if let existing = collections[key] { return existing }
        if let pending = restoring[key] {
            let restored = await pending.value
            // Restored for a user who signed out meanwhile: ask again, for whoever is signed in.
            return restored.client == nil && userID != nil
                ? await self.collection(channelURL: channelURL, category: category, status: status) : restored
        }
        let collection = NotificationCollection(channelURL: channelURL, category: category, status: status, client: userID == nil ? nil : self)
        guard let cache else {
            if userID != nil { collections[key] = collection }
            return collection
        }
        // Kept out of `collections` until restored: nothing refreshes it meanwhile, so what the cache
        // holds can never overwrite a newer answer. The task registers it, so that every caller waiting
        // for it finds it registered.
        let account = self.account
        let task = Task { @MainActor () -> NotificationCollection in
            await cache.restore(collection)
            guard account == self.account else {
                collection.detach()
                return collection
            }
            self.collections[key] = collection
            self.restoring[key] = nil
            return collection
        }
        restoring[key] = task
        return await task.value
    }

    /// The collections the client keeps in step (refreshed by pushes, the stream and the foreground).
    public var openCollections: [NotificationCollection] {
        Array(collections.values)
    }

    /// Brings every open collection, the channel list and the unread counts up to date, at most
    /// `Configuration.maximumConcurrentRefreshes` requests at once. Returns whether anything changed;
    /// throws the first failure once every refresh has ended.
    ///
    /// One failing refresh does not cancel the others: besides being wasted work, cancelling a request
    /// in flight can crash FoundationNetworking on Linux (its task registry loses the task).
    @discardableResult
    public func refreshAll() async throws -> Bool {
        try await refresh(Array(collections.values))
    }

    /// Refreshes `collections`, the channel list and the unread counts (see `refreshAll`). With
    /// `waitingOutRateLimits` (the refreshes the library starts by itself) a request refused with a
    /// `429` waits its `Retry-After` and goes again (`retryingRateLimits`).
    func refresh(_ collections: [NotificationCollection], waitingOutRateLimits: Bool = false) async throws -> Bool {
        guard userID != nil else { throw HeraldClientError.signedOut }
        var work: [@MainActor () async throws -> Bool] = collections.map { collection in { try await collection.refresh() } }
        work.append { [channels] in try await channels.refresh() }
        if waitingOutRateLimits {
            work = work.map { item in { try await self.retryingRateLimits(item) } }
        }
        let results = await Self.run(work, atMost: configuration.maximumConcurrentRefreshes)
        await refreshUnread()
        return try results.reduce(false) { changed, result in try result.get() || changed }
    }

    /// Everything, as the library refreshes by itself: rate limits waited out.
    func refreshAllInBackground() async throws {
        _ = try await refresh(Array(collections.values), waitingOutRateLimits: true)
    }

    /// Runs `work`, at most `limit` at once, and gives every outcome.
    static func run<T: Sendable>(_ work: [@MainActor () async throws -> T], atMost limit: Int) async -> [Result<T, any Error>] {
        await withTaskGroup(of: Result<T, any Error>.self) { group in
            var results: [Result<T, any Error>] = []
            var next = work.makeIterator()
            for _ in 0..<max(limit, 1) {
                guard let item = next.next() else { break }
                group.addTask { await outcome(item) }
            }
            for await result in group {
                results.append(result)
                if let item = next.next() { group.addTask { await outcome(item) } }
            }
            return results
        }
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
    /// and the work goes on to its end, uncancelled (see `refreshAll`), its outcome dropped. Cancelling
    /// the caller stops the wait the same way, with `CancellationError`.
    nonisolated static func within<T: Sendable>(
        _ deadline: Duration,
        orThrow late: HeraldClientError,
        _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        // Not a task group: a group waits for all its children, and a task awaiting another task's
        // result is not ended by cancellation, so the deadline could not cut the wait short.
        let outcome = FirstOutcome<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                outcome.wait(continuation)
                let timer = Task {
                    try? await Task.sleep(for: deadline)
                    outcome.finish(.failure(late))
                }
                Task {
                    let result: Result<T, any Error>
                    do {
                        result = .success(try await work())
                    } catch {
                        result = .failure(error)
                    }
                    outcome.finish(result)
                    timer.cancel()
                }
            }
        } onCancel: {
            outcome.finish(.failure(CancellationError()))
        }
    }

    /// Reads the unread counts afresh (they also come with every sync and stream event).
    public func refreshUnread() async {
        let account = self.account
        guard userID != nil, let answer = try? await api.unread(), account == self.account else { return }
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
        if collections[collection.key] === collection { collections[collection.key] = nil }
    }

    func tell(_ event: Event) {
        log(.info, "event: \(event)")
        onEvent?(event)
    }
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
    /// The connection dropped; the next attempt is scheduled (exponential backoff with jitter), or
    /// comes at once when the network returns.
    case waitingToReconnect
    /// The server refused the session and the token provider gave none that works.
    case failed(HeraldClientError)
}
