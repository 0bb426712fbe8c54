public import Foundation
public import Observation

/// One channel's notifications for the signed-in user (optionally one category, and of one inbox
/// status: by default everything not archived), newest first, kept in step with the server.
///
/// The collection carries the sync protocol's duties so the app does not: it keeps the sync token,
/// applies every change by its position (a version older than the one held changes nothing), never
/// holds a notification twice, removes deleted ones (and those whose state takes them out of its
/// status, until a later change brings them back), and when the server says the token cannot go on
/// (`is_live: false`: the channel was reset, the gap grew too large, the token expired) it reloads
/// from the newest page and says so through `onUpdate` (`.reloaded`).
///
/// It is `@Observable`: SwiftUI views that read `notifications`, `state` or `hasPrevious` update by
/// themselves. UIKit code sets `onUpdate`, which is called after every change with what changed.
/// Get one from `HeraldClient.collection(channelURL:category:status:)`; the client refreshes it on a silent
/// push and applies live stream events to it while connected.
@MainActor
@Observable
public final class NotificationCollection {
    /// What a change did, for apps that update their views by hand.
    public enum Update: Sendable, Equatable {
        /// Notifications came, changed or went (ids).
        case changed(inserted: [String], updated: [String], removed: [String])
        /// The collection was loaded afresh from the newest page: the server could not continue the
        /// old token (`is_live: false`), or this was the first load.
        case reloaded
    }

    public let channelURL: String
    /// Only notifications of this category, when set.
    public let category: String?
    /// Only notifications of this inbox status.
    public let status: InboxStatus

    /// Newest first.
    public internal(set) var notifications: [HeraldNotification] = []
    /// Older notifications exist on the server that `loadPrevious()` would bring.
    public internal(set) var hasPrevious = false
    /// The user's unread count, last read and last seen in this channel.
    public internal(set) var state = ChannelState()
    /// The channel as the server last described it.
    public internal(set) var channel: ChannelInfo?
    /// Whether the collection continues from a token the server accepted (false until the first load,
    /// and while a reload is due).
    public internal(set) var isLive = false
    /// How many times the collection was reloaded from the newest page because the server could not
    /// continue its token.
    public internal(set) var reloadCount = 0

    /// Called on the main actor after each change.
    @ObservationIgnored public var onUpdate: (@MainActor (Update) -> Void)?

    /// The page size of loads and syncs (the server allows up to 100).
    @ObservationIgnored public var pageSize = 30

    @ObservationIgnored var token: String?
    /// Every change below this position is reflected in what the collection holds (the `horizon` of
    /// its last complete answer): a stream event below it is old news, even for a notification it
    /// does not hold (one a reset or a deletion took away since).
    @ObservationIgnored var syncedThrough: Int64 = 0
    /// The position of the newest change `state` reflects.
    @ObservationIgnored var statePosition: Int64 = 0
    @ObservationIgnored var previousCursor: String?
    /// Ids that left the collection (deleted, or out of its status), each with the position of its
    /// leaving: only a version above it brings the notification back, so an older one arriving late
    /// cannot. (A deletion is for good: nothing comes after it.)
    @ObservationIgnored var removedAt: [String: Int64] = [:]
    @ObservationIgnored weak var client: HeraldClient?
    /// Counts loads of the newest page (`reload`): an older page asked for under one load is not
    /// added to the next, whose cursor it does not continue.
    @ObservationIgnored var loads = 0
    /// One sync at a time; a refresh asked for during one runs once more after it.
    @ObservationIgnored private var running: Task<Bool, any Error>?
    @ObservationIgnored private var again = false
    /// One older page at a time: a second call while one loads shares it.
    @ObservationIgnored private var loadingPrevious: Task<Void, any Error>?

    init(channelURL: String, category: String?, status: InboxStatus = .inbox, client: HeraldClient?) {
        self.channelURL = channelURL
        self.category = category
        self.status = status
        self.client = client
    }

    var key: CollectionKey { CollectionKey(channelURL: channelURL, category: category, status: status) }

    /// Brings the collection up to date: the first page when it has none (or after the server refused
    /// its token), else every change since its token. Returns whether anything changed.
    @discardableResult
    public func refresh() async throws -> Bool {
        guard client != nil else { throw HeraldClientError.signedOut }
        // One sync at a time: a refresh asked for while one runs makes it go round once more (what
        // changed meanwhile is then in hand) and shares its outcome.
        if let running {
            again = true
            return try await running.value
        }
        let task = Task { @MainActor in try await self.runSyncs() }
        running = task
        defer { running = nil }
        return try await task.value
    }

    /// Loads the page of notifications older than the oldest held. A call while one loads waits for
    /// it (the next page needs its cursor); a page that comes back after the collection was reloaded
    /// from the newest page is dropped, since it would leave a gap.
    public func loadPrevious() async throws {
        if let loadingPrevious { return try await loadingPrevious.value }
        let task = Task { @MainActor in try await self.loadPreviousPage() }
        loadingPrevious = task
        defer { loadingPrevious = nil }
        try await task.value
    }

    private func loadPreviousPage() async throws {
        guard hasPrevious, let cursor = previousCursor, let client else { return }
        let load = loads
        let page = try await client.api.older(channelURL: channelURL, before: cursor, limit: pageSize, category: category, status: status)
        guard load == loads, self.client != nil else { return }
        var older: [HeraldNotification] = []
        for version in page.notifications where version.position > removedAt[version.id, default: .min] && index(of: version.id) == nil {
            notifications.insert(version, at: insertionIndex(for: version.number))
            older.append(version)
        }
        previousCursor = page.previousCursor
        hasPrevious = page.previousCursor != nil
        await client.cache?.save(self, upserted: older, removed: [])
        notify(.changed(inserted: older.map(\.id), updated: [], removed: []))
    }

    /// Marks every notification of the channel read, or only `ids`; returns the unread count after.
    @discardableResult
    public func markRead(_ ids: [String]? = nil) async throws -> Int {
        guard let client else { throw HeraldClientError.signedOut }
        let marked = try await client.api.markRead(channelURL: channelURL, ids: ids)
        guard self.client != nil else { throw HeraldClientError.signedOut }
        take(marked)
        // The copies' statuses change with it; the sync brings them (by position, like any change).
        try await refresh()
        await client.refreshUnread()
        return state.unreadCount
    }

    /// Moves `lastSeenAt` forward (to now, or `at`).
    public func markSeen(at: Date? = nil) async throws {
        guard let client else { throw HeraldClientError.signedOut }
        let marked = try await client.api.markSeen(channelURL: channelURL, at: at)
        // Detached meanwhile (its user signed out): the next user's cache is not its own.
        guard self.client != nil else { throw HeraldClientError.signedOut }
        take(marked)
        await client.cache?.saveMeta(self)
    }

    /// A mark's answer: newer than any answer read below its position (a read standby that has not
    /// replayed the mark yet), which therefore cannot replace it.
    func take(_ marked: (state: ChannelState, position: Int64?)) {
        guard let position = marked.position else {
            state = marked.state
            return
        }
        takeState(marked.state, at: position + 1)
        client?.noteUnread(marked.state.unreadCount, channel: channelURL, at: position + 1)
    }

    /// Tells the server the user saw or opened these notifications (for its statistics).
    public func log(_ event: NotificationEvent, ids: [String]) async throws {
        try await client?.api.logEvents(event, ids: ids)
    }

    /// Stops keeping the collection up to date and forgets it (the cache keeps its last state).
    public func dispose() {
        client?.forget(self)
    }

    /// Empties the collection and cuts it from the client (its user signed out): it shows nothing,
    /// and answers still in flight for it change nothing.
    func detach() {
        client = nil
        notifications = []
        hasPrevious = false
        previousCursor = nil
        state = ChannelState()
        channel = nil
        isLive = false
        token = nil
        notify(.reloaded)
    }

    /// The index of the notification `id`, by binary search: the list is newest first, and ids grow.
    func index(of id: String) -> Int? {
        guard let number = Int64(id) else { return nil }
        let at = insertionIndex(for: number)
        return at < notifications.count && notifications[at].number == number ? at : nil
    }

    /// Where a notification with id `number` belongs: the first index whose id is not greater.
    func insertionIndex(for number: Int64) -> Int {
        // One read of the observed property, not one per probe.
        let list = notifications
        var (low, high) = (0, list.count)
        while low < high {
            let middle = (low + high) / 2
            if list[middle].number > number { low = middle + 1 } else { high = middle }
        }
        return low
    }

    func notify(_ update: Update) {
        if case .changed(let inserted, let updated, let removed) = update, inserted.isEmpty, updated.isEmpty, removed.isEmpty { return }
        onUpdate?(update)
    }

    private func runSyncs() async throws -> Bool {
        var changed = false
        repeat {
            again = false
            changed = try await sync() || changed
        } while again
        return changed
    }
}

/// Which collection: a channel and an optional category.
struct CollectionKey: Hashable, Sendable {
    var channelURL: String
    var category: String?
    var status: InboxStatus = .inbox

    /// The cache's key: the default status adds nothing, so collections cached before statuses stay.
    var text: String {
        let channel = category.map { "\(channelURL)\u{1F}\($0)" } ?? channelURL
        return status == .inbox ? channel : "\(channel)\u{1E}\(status.rawValue)"
    }
}
