import Foundation

extension HeraldClient {
    /// Handles a remote notification the app received (the app delegate's
    /// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`).
    ///
    /// A Herald push sets the badge it carries at once, then syncs the collections of the channels it
    /// names (every open one when it names none, or more changed than fit), the channel list and the
    /// unread counts, naming this device — which tells the server the push was answered, so that the
    /// next change pushes the device again; all within `Configuration.backgroundRefreshDeadline`,
    /// waiting out a `429` if there is time. Returns what iOS wants to hear: `.newData` when something
    /// changed, `.noData` when nothing did or the push was not Herald's, `.failed` when the refresh
    /// failed or ran out of time.
    public func handleRemoteNotification(_ userInfo: [AnyHashable: Any]) async -> BackgroundFetchResult {
        guard let push = HeraldPush(userInfo: userInfo) else { return .noData }
        return await handle(push)
    }

    /// Handles a Herald push (see `handleRemoteNotification(_:)`).
    public func handle(_ push: HeraldPush) async -> BackgroundFetchResult {
        guard userID != nil else { return .noData }
        var named: Set<String>?
        switch push {
        case .refresh(let refresh):
            // The push's count is newer than anything held (no stream is open while pushes come).
            unread.total = refresh.badge
            if !refresh.truncated, !refresh.channels.isEmpty { named = Set(refresh.channels.map(\.channelURL)) }
        case .alert(let alert):
            if let badge = alert.badge { unread.total = badge }
            named = [alert.channelURL]
        }
        let targets = collections.values.filter { named?.contains($0.channelURL) ?? true }
        do {
            let changed = try await Self.within(configuration.backgroundRefreshDeadline, orThrow: .timedOut) { @MainActor in
                try await self.refresh(targets, waitingOutRateLimits: true)
            }
            return changed ? .newData : .noData
        } catch {
            log(.warning, "the push's refresh failed: \(error)")
            return .failed
        }
    }

    /// Handles the user's tap on a Herald alert (the `UNUserNotificationCenterDelegate`'s
    /// `userNotificationCenter(_:didReceive:)`, with `response.notification.request.content.userInfo`):
    /// logs the click for the server's statistics, marks the notification read when `markRead` is
    /// true, and returns where the app should go. `nil` when the push was not a Herald alert. A click
    /// or mark that cannot reach the server is logged, not thrown: the app opens the notification
    /// either way.
    public func handleNotificationResponse(_ userInfo: [AnyHashable: Any], markRead: Bool = false) async -> NotificationRoute? {
        guard case .alert(let alert) = HeraldPush(userInfo: userInfo) else { return nil }
        let route = NotificationRoute(channelURL: alert.channelURL, notificationID: alert.notificationID)
        guard userID != nil else { return route }
        do {
            try await api.logEvents(.clicked, ids: [alert.notificationID])
        } catch {
            log(.warning, "logging the click failed: \(error)")
        }
        if markRead {
            do {
                let open = collections.values.filter { $0.channelURL == alert.channelURL }
                if let collection = open.first {
                    try await collection.markRead([alert.notificationID])
                    for other in open.dropFirst() { try await other.refresh() }
                } else {
                    _ = try await api.markRead(channelURL: alert.channelURL, ids: [alert.notificationID])
                    await refreshUnread()
                }
            } catch {
                log(.warning, "marking the tapped notification read failed: \(error)")
            }
        }
        return route
    }
}
