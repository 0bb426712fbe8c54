public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Delivery receipts from a Notification Service Extension, which runs apart from the app with little
/// memory and time: no client, no stream, no cache — one request under a deadline.
/// `HeraldNotificationService` (iOS) posts it together with the media attachment; this is the receipt
/// alone.
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
        guard let receipt = ReceiptPayload(userInfo: userInfo) else { return [] }
        return try await post(herald: receipt, serverURL: serverURL, sessionToken: sessionToken, timeout: timeout)
    }

    static func post(herald receipt: ReceiptPayload, serverURL: URL, sessionToken: String, timeout: Duration) async throws -> [String] {
        let session = URLSession.ephemeral(timeout: timeout)
        defer { session.finishTasksAndInvalidate() }
        let api = HeraldAPI(serverURL: serverURL, credentials: SessionCredentials(token: sessionToken, provider: nil), session: session)
        return try await HeraldClient.within(timeout, orThrow: .timedOut) {
            try await api.markDelivered(herald: receipt.herald)
        }
    }
}

/// A push's `herald` object as a receipt sends it back, read out of the (not `Sendable`) `userInfo`.
struct ReceiptPayload: Sendable {
    let herald: Operations.MarkDelivered.Input.Body.JsonPayload.HeraldPayload

    init?(userInfo: [AnyHashable: Any]) {
        guard let object = userInfo["herald"] as? [String: Any], JSONSerialization.isValidJSONObject(object),
            let data = try? JSONSerialization.data(withJSONObject: object),
            let herald = try? JSONDecoder().decode(Operations.MarkDelivered.Input.Body.JsonPayload.HeraldPayload.self, from: data)
        else { return nil }
        self.herald = herald
    }
}
