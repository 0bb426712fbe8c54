public import Foundation
public import Observation

/// A feed channel as a list view shows it: newest first, each notification with a "new" badge, older
/// pages as the user scrolls, and a category filter. For SwiftUI (it is `@Observable`) and UIKit
/// (read `items` in `onChange`, or observe with `withObservationTracking`).
///
/// The badge compares a notification's time with the user's last-seen time **as it was when the
/// view opened** (`open()`): marking the channel seen on open moves the server's last-seen time, and
/// the badges must not vanish under the user's eyes. `updateLastSeenAt()` moves both on purpose (a
/// "mark all as seen" button).
@MainActor
@Observable
public final class FeedModel {
    /// One row.
    public struct Item: Sendable, Identifiable, Equatable {
        public var notification: HeraldNotification
        /// Created after the last-seen time of the snapshot.
        public var isNew: Bool
        public var id: String { notification.id }
    }

    public let channelURL: String
    /// The category shown, `nil` for all (`select(category:)` changes it).
    public private(set) var category: String?
    /// The list's state.
    public var phase: ViewPhase { loader.phase }
    /// An older page is loading.
    public var isLoadingMore: Bool { loader.isLoadingOlder }
    /// The last older page failed (shown under the list; `loadMore()` tries again).
    public var loadMoreError: HeraldClientError? { loader.olderError }
    /// The last-seen time the badges are decided by: the server's when the view opened, until
    /// `updateLastSeenAt()`. `nil` when the user has never seen the channel (everything is new).
    public private(set) var seenSnapshot: Date?

    @ObservationIgnored private let client: HeraldClient
    @ObservationIgnored private let loader = CollectionLoader()
    @ObservationIgnored private var snapshotTaken = false
    private var collection: NotificationCollection? { loader.collection }

    public init(client: HeraldClient, channelURL: String, category: String? = nil) {
        self.client = client
        self.channelURL = channelURL
        self.category = category
    }

    /// Newest first, each with its badge.
    public var items: [Item] {
        guard let collection else { return [] }
        let seen = seenSnapshot
        return collection.notifications.map { notification in
            Item(notification: notification, isNew: seen.map { notification.createdAt > $0 } ?? true)
        }
    }

    /// No older notifications are left to load.
    public var isAtEnd: Bool {
        collection.map { !$0.hasPrevious } ?? false
    }

    /// The channel's unread count.
    public var unreadCount: Int {
        collection?.state.unreadCount ?? 0
    }

    /// Opens the view: takes the collection (the cache's last state shows at once), the last-seen
    /// snapshot, and refreshes.
    public func open() async {
        let category = self.category
        let collection = await client.collection(channelURL: channelURL, category: category)
        // Another category was picked meanwhile: its own `open` shows it.
        guard category == self.category else { return }
        loader.take(collection)
        if collection.isLive { takeSnapshot() }
        await refresh()
    }

    /// Brings the list up to date (pull to refresh).
    public func refresh() async {
        guard collection != nil else { return await open() }
        await loader.refresh()
        takeSnapshot()
    }

    /// Loads the next older page (the list scrolled to its end); does nothing at the end.
    public func loadMore() async {
        await loader.loadOlder()
    }

    /// Shows another category (`nil`: all), from its own collection.
    public func select(category: String?) async {
        guard category != self.category else { return }
        self.category = category
        loader.drop()
        await open()
    }

    /// Tells the server the user has seen the channel up to now, without moving the badges (call it
    /// when the view appears).
    public func markSeen() async throws {
        try await collection?.markSeen()
    }

    /// Moves the last-seen time to now on the server and in the snapshot: every badge goes.
    public func updateLastSeenAt() async throws {
        guard let collection else { return }
        try await collection.markSeen()
        seenSnapshot = collection.state.lastSeenAt
    }

    /// Marks everything in the channel read.
    public func markAllRead() async throws {
        try await collection?.markRead()
    }

    /// Logs that the user opened `item` (its statistics) and marks it read.
    public func didOpen(_ item: Item) async throws {
        guard let collection else { return }
        try await collection.log(.clicked, ids: [item.id])
        if item.notification.status != .read { try await collection.markRead([item.id]) }
    }

    /// The snapshot, once: from the first state the collection knows (the cache's, or the first load).
    private func takeSnapshot() {
        guard !snapshotTaken, let collection, collection.isLive else { return }
        snapshotTaken = true
        seenSnapshot = collection.state.lastSeenAt
    }
}
