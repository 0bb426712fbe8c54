import Foundation

extension NotificationCollection {
    /// Syncs until the server has no more (`has_more`), or reloads when it cannot continue the token.
    /// Returns whether anything changed. An answer that arrives after the collection was detached
    /// (its user signed out) changes nothing.
    func sync() async throws -> Bool {
        guard let client else { throw HeraldClientError.signedOut }
        guard var current = token else {
            try await reload()
            return true
        }
        var changed = false
        while true {
            let answer = try await client.namingDevice { device in
                try await client.api.sync(channelURL: channelURL, token: current, limit: pageSize, category: category, status: status, device: device)
            }
            guard self.client != nil else { throw HeraldClientError.signedOut }
            guard answer.isLive, let next = answer.nextToken else {
                isLive = false
                try await reload()
                return true
            }
            // Every change the answer holds lies below its horizon; anything later lies at or above it.
            let (inserted, updated, removed) = apply(answer.notifications, removed: answer.deleted, at: answer.horizon - 1)
            takeChannel(answer)
            if !answer.hasMore { syncedThrough = max(syncedThrough, answer.horizon) }
            client.noteBadge(answer.badge, at: answer.horizon)
            token = next
            await client.cache?.save(self, upserted: held(inserted + updated), removed: removed)
            notify(.changed(inserted: inserted, updated: updated, removed: removed))
            changed = changed || !(inserted.isEmpty && updated.isEmpty && removed.isEmpty)
            guard answer.hasMore else { return changed }
            current = next
        }
    }

    /// Loads the newest page afresh, dropping everything held. A page of older notifications asked
    /// for before it (`loadPrevious`) is dropped when it comes: its cursor belongs to what was held.
    func reload() async throws {
        guard let client else { throw HeraldClientError.signedOut }
        let answer = try await client.namingDevice { device in
            try await client.api.sync(channelURL: channelURL, token: nil, limit: pageSize, category: category, status: status, device: device)
        }
        guard self.client != nil else { throw HeraldClientError.signedOut }
        let wasLoaded = token != nil
        loads += 1
        notifications = answer.notifications.sorted { $0.number > $1.number }
        previousCursor = answer.previousCursor
        hasPrevious = answer.previousCursor != nil
        removedAt = [:]
        token = answer.nextToken
        isLive = answer.nextToken != nil
        syncedThrough = answer.horizon
        statePosition = 0
        takeChannel(answer)
        client.noteBadge(answer.badge, at: answer.horizon)
        if wasLoaded { reloadCount += 1 }
        await client.cache?.replace(self)
        notify(.reloaded)
    }

    /// Takes the state a stream event carries, if it is newer than the state held.
    func takeState(_ newer: ChannelState, at position: Int64) {
        guard position >= statePosition else { return }
        state = newer
        statePosition = position
    }

    /// Takes only the unread count a stream event carries, if it is newer than the state held.
    func takeUnread(_ count: Int, at position: Int64) {
        guard position >= statePosition else { return }
        state.unreadCount = count
        statePosition = position
    }

    /// The versions held now of these ids.
    func held(_ ids: [String]) -> [HeraldNotification] {
        ids.compactMap { id in index(of: id).map { notifications[$0] } }
    }

    private func takeChannel(_ answer: SyncAnswer) {
        // The answer's state is its snapshot's: newer than any event below its horizon.
        if answer.horizon >= statePosition {
            state = answer.state
            statePosition = answer.horizon
            client?.noteUnread(state.unreadCount, channel: channelURL, at: answer.horizon)
        }
        channel = answer.channel
    }

    /// Applies versions of notifications and removals by position: a version replaces the one held
    /// only if its position is not lower; one not held comes in only if it is not older than what the
    /// collection has synced through (`live` events; a sync's own versions always); a version whose
    /// state is outside the collection's status takes the notification out, as a removal does; a
    /// removed id comes back only with a version above its removal (`position`: where the removals
    /// happened, or an upper bound below any later change); a notification older than the oldest held
    /// while older pages exist is left for `loadPrevious()` (holding it would leave a gap). Returns
    /// the ids inserted, updated and removed.
    func apply(
        _ versions: [HeraldNotification],
        removed ids: [String],
        at position: Int64 = .max,
        live: Bool = false
    ) -> (inserted: [String], updated: [String], removed: [String]) {
        var inserted: [String] = []
        var updated: [String] = []
        var removed: [String] = []
        for version in versions {
            if let category, version.category != category { continue }
            if let left = removedAt[version.id], version.position <= left { continue }
            guard status.shows(version) else {
                // Archived, read or unread elsewhere: it leaves this collection by its position, and
                // a later change may bring it back.
                if live, version.position < syncedThrough { continue }
                if let index = index(of: version.id) {
                    guard version.position >= notifications[index].position else { continue }
                    notifications.remove(at: index)
                    removed.append(version.id)
                }
                removedAt[version.id] = version.position
                continue
            }
            if let index = index(of: version.id) {
                guard version.position >= notifications[index].position, version != notifications[index] else { continue }
                notifications[index] = version
                updated.append(version.id)
            } else {
                if live, version.position < syncedThrough { continue }
                if hasPrevious, let oldest = notifications.last, version.number < oldest.number { continue }
                notifications.insert(version, at: insertionIndex(for: version.number))
                inserted.append(version.id)
            }
        }
        for id in ids {
            removedAt[id] = max(removedAt[id, default: .min], position)
            if let index = index(of: id) {
                notifications.remove(at: index)
                removed.append(id)
            }
        }
        return (inserted, updated, removed)
    }
}
