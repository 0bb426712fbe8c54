import Foundation

/// The user's own states of their notifications: archive, unarchive, mark unread, delete, actions
/// pressed. Each
/// returns the unread count after; every collection of the channel this client keeps (the inbox, the
/// archive, …) then syncs, and so do the user's other devices, by the stream or their next sync.
extension NotificationCollection {
    /// Archives these notifications (reading them): they leave the inbox for the `.archived` status.
    @discardableResult
    public func archive(_ ids: [String]) async throws -> Int {
        try await change { try await $0.archive(channelURL: channelURL, .ids(ids)) }
    }

    /// Archives every notification of the channel that is read.
    @discardableResult
    public func archiveRead() async throws -> Int {
        try await change { try await $0.archive(channelURL: channelURL, .read) }
    }

    /// Archives every notification of the channel, reading them all.
    @discardableResult
    public func archiveAll() async throws -> Int {
        try await change { try await $0.archive(channelURL: channelURL, .all) }
    }

    /// Brings archived notifications back to the inbox (still read).
    @discardableResult
    public func unarchive(_ ids: [String]) async throws -> Int {
        try await change { try await $0.unarchive(channelURL: channelURL, ids: ids) }
    }

    /// Marks read notifications unread again (back in the inbox if archived); the count follows.
    @discardableResult
    public func markUnread(_ ids: [String]) async throws -> Int {
        try await change { try await $0.markUnread(channelURL: channelURL, ids: ids) }
    }

    /// Removes notifications from this user's collections on every device.
    @discardableResult
    public func delete(_ ids: [String]) async throws -> Int {
        try await change { try await $0.delete(channelURL: channelURL, ids: ids) }
    }

    /// Presses one of a notification's actions (`HeraldNotification.actions`): remembered on every
    /// device of the user. Pressing one already pressed changes nothing.
    @discardableResult
    public func press(_ action: String, on notificationID: String) async throws -> Int {
        // The answer's state is that of the notification's channel, which need not be this one's: only
        // the syncs bring the change.
        try await change(taking: false) { try await $0.press(action: action, notificationID: notificationID) }
    }

    private func change(taking: Bool = true, _ call: (HeraldAPI) async throws -> (state: ChannelState, position: Int64?)) async throws -> Int {
        guard let client else { throw HeraldClientError.signedOut }
        let changed = try await call(client.api)
        guard self.client != nil else { throw HeraldClientError.signedOut }
        if taking { take(changed) }
        // The copies changed with it; every collection of the channel syncs them, each by position.
        for collection in client.collections(of: channelURL) where collection !== self {
            if taking { collection.take(changed) }
            client.startBackgroundRefresh("inbox state changed") { _ = try await collection.refresh() }
        }
        try await refresh()
        await client.refreshUnread()
        return state.unreadCount
    }
}
