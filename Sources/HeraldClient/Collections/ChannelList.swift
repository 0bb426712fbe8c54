public import Foundation
public import Observation

/// The user's channels — chat channels newest activity first, then feed channels — kept up to date by
/// the list's own change log: a refresh asks only for what changed since its token, and starts over
/// when the server cannot continue it.
@MainActor
@Observable
public final class ChannelList {
    /// One channel of the list.
    public struct Entry: Sendable, Hashable, Identifiable, Codable {
        public var channel: ChannelInfo
        /// The user's unread notifications in the channel.
        public var unreadCount: Int
        /// When something last happened in the channel for the user (the chat list's order).
        public var lastActivityAt: Date
        /// A chat channel's newest notification.
        public var lastNotification: HeraldNotification?
        public var id: String { channel.url }
    }

    /// Chat channels, newest activity first.
    public internal(set) var chat: [Entry] = []
    /// Feed channels, by URL.
    public internal(set) var feed: [Entry] = []

    /// Called on the main actor after each change.
    @ObservationIgnored public var onUpdate: (@MainActor () -> Void)?

    @ObservationIgnored var token: String?
    @ObservationIgnored weak var client: HeraldClient?
    @ObservationIgnored private var running: Task<Bool, any Error>?
    @ObservationIgnored private var again = false

    init() {}

    /// The whole list (no token yet, or the token cannot continue) or the changes since the token.
    /// Returns whether anything changed. One refresh at a time: one asked for while another runs makes
    /// it go round once more and shares its outcome, so answers are applied in the order they were
    /// asked for.
    @discardableResult
    public func refresh() async throws -> Bool {
        if let running {
            again = true
            return try await running.value
        }
        let task = Task { @MainActor () -> Bool in
            var changed = false
            repeat {
                self.again = false
                changed = try await self.refreshOnce() || changed
            } while self.again
            return changed
        }
        running = task
        defer { running = nil }
        return try await task.value
    }

    private func refreshOnce() async throws -> Bool {
        guard let client, client.userID != nil else { throw HeraldClientError.signedOut }
        let account = client.account
        var whole = token == nil
        var answer = try await client.namingDevice { device in try await client.api.channels(token: token, device: device) }
        if !answer.isLive {
            answer = try await client.namingDevice { device in try await client.api.channels(token: nil, device: device) }
            whole = true
        }
        // Signed out (or in as someone else) meanwhile: the answer is another user's.
        guard account == client.account else { throw HeraldClientError.signedOut }
        let before = (chat, feed)
        var entries = whole ? [:] : Dictionary(uniqueKeysWithValues: (chat + feed).map { ($0.id, $0) })
        for url in answer.deleted { entries[url] = nil }
        for entry in answer.entries { entries[entry.id] = entry }
        arrange(Array(entries.values))
        token = answer.nextToken
        await client.cache?.saveChannelList(snapshot)
        let changed = before != (chat, feed)
        if changed { onUpdate?() }
        return changed
    }

    /// Empties the list (its user signed out).
    func clear() {
        guard !(chat.isEmpty && feed.isEmpty && token == nil) else { return }
        chat = []
        feed = []
        token = nil
        onUpdate?()
    }

    /// Orders entries as the server does: chat by newest activity, then feed by URL.
    func arrange(_ entries: [Entry]) {
        chat = entries.filter { $0.channel.kind == .chat }.sorted { ($0.lastActivityAt, $1.id) > ($1.lastActivityAt, $0.id) }
        feed = entries.filter { $0.channel.kind == .feed }.sorted { $0.id < $1.id }
    }

    /// What the cache keeps.
    struct Snapshot: Codable {
        var entries: [Entry]
        var token: String?
    }

    var snapshot: Snapshot { Snapshot(entries: chat + feed, token: token) }

    func restore(_ snapshot: Snapshot) {
        arrange(snapshot.entries)
        token = snapshot.token
    }

    /// A live `channel.updated`: the entry's definition, if listed.
    func update(_ info: ChannelInfo) {
        var entries = chat + feed
        guard let index = entries.firstIndex(where: { $0.id == info.url }) else { return }
        entries[index].channel = info
        arrange(entries)
        onUpdate?()
    }

    /// A live `channel.deleted`.
    func remove(_ url: String) {
        guard (chat + feed).contains(where: { $0.id == url }) else { return }
        arrange((chat + feed).filter { $0.id != url })
        onUpdate?()
    }
}

extension ChannelList.Entry {
    init(_ wire: Components.Schemas.ChannelListEntry) throws {
        self.init(
            channel: ChannelInfo(
                url: wire.channelUrl,
                kind: wire.kind == .chat ? .chat : .feed,
                name: wire.name,
                coverURL: wire.coverUrl,
                customType: wire.customType
            ),
            unreadCount: wire.unreadCount,
            lastActivityAt: wire.lastActivityAt,
            lastNotification: try wire.lastNotification.map(HeraldNotification.init(converting:))
        )
    }
}
