public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Delivery receipts from a Notification Service Extension, which runs apart from the app with little
/// memory and time: no client, no stream, no cache — one request under a deadline.
///
/// ```swift
/// override func didReceive(_ request: UNNotificationRequest, withContentHandler handler: ...) {
///     Task {
///         try? await DeliveryReceipt.post(
///             userInfo: request.content.userInfo, serverURL: url, sessionToken: token)
///         handler(request.content)
///     }
/// }
/// ```
public enum DeliveryReceipt {
    /// Posts the receipt for the push whose payload is `userInfo` (its `herald` object names the
    /// notification). Returns the ids that became delivered now (none when the push was not Herald's
    /// or was already counted). Throws `HeraldClientError.timedOut` past `timeout`.
    @discardableResult
    nonisolated(nonsending) public static func post(
        userInfo: [AnyHashable: Any],
        serverURL: URL,
        sessionToken: String,
        timeout: Duration = .seconds(5)
    ) async throws -> [String] {
        guard let herald = userInfo["herald"] as? [String: Any], JSONSerialization.isValidJSONObject(herald) else { return [] }
        let payload = try JSONDecoder().decode(
            Operations.MarkDelivered.Input.Body.JsonPayload.HeraldPayload.self,
            from: JSONSerialization.data(withJSONObject: herald)
        )
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = seconds
        configuration.timeoutIntervalForResource = seconds
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let api = HeraldAPI(serverURL: serverURL, credentials: SessionCredentials(token: sessionToken, provider: nil), session: session)
        return try await HeraldClient.within(timeout, orThrow: .timedOut) {
            try await api.markDelivered(herald: payload)
        }
    }
}
