#if os(iOS)
public import UserNotifications

/// A Notification Service Extension's work on one Herald alert: the delivery receipt and the media
/// attachment, within the extension's time, handing the content to the system exactly once — early,
/// with what is ready, when `serviceExtensionTimeWillExpire()` comes first. It holds the content
/// handler itself, so the extension's code captures nothing that is not `Sendable`:
///
/// ```swift
/// final class NotificationService: UNNotificationServiceExtension {
///     private var herald: HeraldNotificationService?
///
///     override func didReceive(_ request: UNNotificationRequest,
///                              withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
///         let service = HeraldNotificationService(request: request, contentHandler: contentHandler)
///         herald = service
///         service.start(serverURL: URL(string: "https://herald.example.com")!, sessionToken: SharedSession.current)
///     }
///
///     override func serviceExtensionTimeWillExpire() {
///         herald?.deliverNow()
///     }
/// }
/// ```
public final class HeraldNotificationService: @unchecked Sendable {
    // Guarded by `lock`: the content handler and the content are not `Sendable`; every use of them is
    // under the lock, on whichever thread comes (the extension's, the download's).
    private let lock = NSLock()
    private var contentHandler: ((UNNotificationContent) -> Void)?
    private let content: UNMutableNotificationContent
    private let push: AlertPush?

    public init(request: UNNotificationRequest, contentHandler: @escaping (UNNotificationContent) -> Void) {
        self.contentHandler = contentHandler
        content = (request.content.mutableCopy() as? UNMutableNotificationContent) ?? UNMutableNotificationContent()
        if case .alert(let alert) = HeraldPush(userInfo: request.content.userInfo) { push = alert } else { push = nil }
        receipt = ReceiptPayload(userInfo: request.content.userInfo)
    }

    private let receipt: ReceiptPayload?

    /// Posts the receipt (when `sessionToken` is given) and downloads the media (when the push names
    /// one) at once, each within `timeout`, then hands the content over.
    public func start(serverURL: URL, sessionToken: String?, timeout: Duration = .seconds(20)) {
        Task {
            async let receipt: Void = postReceipt(serverURL: serverURL, sessionToken: sessionToken, timeout: timeout)
            async let media = downloadMedia(timeout: timeout)
            _ = await receipt
            if let file = await media, let attachment = try? UNNotificationAttachment(identifier: "herald-media", url: file) {
                // Not once the content was handed over (`deliverNow` when time ran out).
                lock.withLock { if contentHandler != nil { content.attachments = [attachment] } }
            }
            deliverNow()
        }
    }

    /// Hands the content to the system now, with whatever is attached (the extension's time runs out);
    /// later calls do nothing.
    public func deliverNow() {
        lock.withLock {
            guard let handler = contentHandler else { return }
            contentHandler = nil
            handler(content)
        }
    }

    private func postReceipt(serverURL: URL, sessionToken: String?, timeout: Duration) async {
        guard let sessionToken, let receipt else { return }
        _ = try? await DeliveryReceipt.post(herald: receipt, serverURL: serverURL, sessionToken: sessionToken, timeout: timeout)
    }

    private func downloadMedia(timeout: Duration) async -> URL? {
        guard let url = push?.mediaURLs.first else { return nil }
        return try? await NotificationMedia.download(url, timeout: timeout)
    }
}
#endif
