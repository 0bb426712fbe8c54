import Foundation

extension HeraldClient {
    /// Handles a remote notification the app received (in the app delegate's
    /// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`).
    ///
    /// For Herald's silent refresh push it syncs every open collection and the channel list, naming
    /// this device, which tells the server the push was answered so that the next change pushes the
    /// device again; all within `Configuration.backgroundRefreshDeadline`. Returns what iOS wants to
    /// hear: `.newData` when something changed, `.noData` when nothing did or the push was not
    /// Herald's, `.failed` when the refresh failed or ran out of time.
    public func handleRemoteNotification(_ userInfo: [AnyHashable: Any]) async -> BackgroundFetchResult {
        guard userInfo["herald"] is [String: Any] else { return .noData }
        let deadline = configuration.backgroundRefreshDeadline
        do {
            let changed = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask { try await self.refreshAll() }
                group.addTask {
                    try await Task.sleep(for: deadline)
                    throw HeraldClientError.timedOut
                }
                defer { group.cancelAll() }
                return try await group.next() ?? false
            }
            return changed ? .newData : .noData
        } catch {
            return .failed
        }
    }
}
