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
        do {
            let changed = try await Self.within(configuration.backgroundRefreshDeadline, orThrow: .timedOut) {
                try await self.refreshAll()
            }
            return changed ? .newData : .noData
        } catch {
            return .failed
        }
    }
}
