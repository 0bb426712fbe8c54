import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldCrypto
import HeraldStore
import Logging
import Synchronization
import WebPush

/// Where the dispatcher's Web Push pushes go: browsers' push services, each message encrypted for its
/// subscription and signed with the server's VAPID key (made at first start, kept sealed in the
/// database, replaced by an upload). A key that does not open fails the pushes with the reason.
public final class WebPushTransport: PushServiceTransport {
    private struct State: Sendable {
        var fingerprint: [UInt8]?
        var client: Result<WebPushClient, Unusable>?
    }

    private struct Unusable: Error {
        var reason: String
    }

    private let store: SettingsStore
    private let box: SecretBox
    private let settings: PushSettings
    private let logger: Logger
    private let http: HTTPClient
    private let state = Mutex(State())

    public var service: PushService { .webpush }

    public init(store: SettingsStore, box: SecretBox, settings: PushSettings, logger: Logger) {
        self.store = store
        self.box = box
        self.settings = settings
        self.logger = logger
        self.http = PushHTTP.makeClient(settings)
    }

    public func refresh() async throws {
        let stored = try await store.storedVAPIDKey()
        guard stored == nil || state.withLock({ $0.fingerprint }) != stored else { return }
        let (key, sealed) = try await store.vapidKey(box: box)
        let client: Result<WebPushClient, Unusable>
        if let key, let subject = settings.vapidSubject {
            client = .success(WebPushClient(key: key, subject: subject, http: http, logger: logger, timeout: settings.requestTimeout))
        } else if key == nil {
            logger.error("the VAPID key cannot be opened; Web Push fails until a key is uploaded (PUT /v1/webpush/key)")
            client = .failure(Unusable(reason: "the VAPID key does not open with this server's secret key; upload one"))
        } else {
            logger.notice("HERALD_VAPID_SUBJECT is not set: pushes to browsers fail until it names your contact (mailto: or https:)")
            client = .failure(Unusable(reason: "HERALD_VAPID_SUBJECT is not set: push services need the operator's contact"))
        }
        state.withLock { state in
            state.client = client
            state.fingerprint = sealed
        }
    }

    public func send(_ messages: [PushMessage]) async -> [(result: PushResult, elapsed: Duration)] {
        let client = state.withLock { $0.client }
        let now = Int64(Date().timeIntervalSince1970)
        let deadline = ContinuousClock.now + settings.batchDeadline
        return await PushHTTP.map(messages, limit: settings.concurrency) { message in
            guard ContinuousClock.now < deadline else { return PushHTTP.notSent }
            let usable: WebPushClient
            switch client {
            case .success(let held): usable = held
            case .failure(let unusable): return (PushResult(.permanent, reason: unusable.reason), .zero)
            case nil: return (PushResult(.transient, reason: "the VAPID key is not loaded yet"), .zero)
            }
            guard let keys = message.address.webPushKeys, let endpoint = URL(string: message.address.token) else {
                return (PushResult(.permanent, reason: "not a Web Push subscription"), .zero)
            }
            let (payload, options) = Self.payload(for: message, now: now)
            let start = ContinuousClock.now
            let outcome = await usable.send(
                payload,
                to: WebPushSubscription(endpoint: endpoint, p256dh: keys.p256dh, auth: keys.auth),
                options: options
            )
            return (PushResult(outcome), ContinuousClock.now - start)
        }
    }

    /// What a browser receives for `message`, and how the push service treats it: a refresh is
    /// `{"herald":{…}}` at normal urgency with a topic per user (a queued older one is replaced); an
    /// alert adds the notification for the service worker to show, at high urgency (normal for
    /// `priority: low`), with the topic of its collapse id.
    static func payload(for message: PushMessage, now: Int64) -> ([UInt8], WebPushClient.Options) {
        let ttl = message.timeToLive(now: now)
        switch message.content {
        case .refresh(let channels, let notificationID):
            let payload = RefreshPayload.make(
                channels: channels,
                badge: channels.reduce(0) { $0 + $1.unread },
                notificationID: notificationID,
                format: .web,
                maximumBytes: WebPushPayload.maximumPlaintext
            )
            return (payload, .init(timeToLive: ttl, urgency: .normal, topic: WebPushClient.topic(for: message.refreshCollapseKey)))
        case .alert(let content, let priority, let collapseID):
            let payload = AlertPayload.makeWeb(content, maximumBytes: WebPushPayload.maximumPlaintext)
            return (payload, .init(timeToLive: ttl, urgency: priority == .low ? .normal : .high, topic: collapseID.map(WebPushClient.topic(for:))))
        }
    }

    public func shutdown() async {
        try? await http.shutdown()
    }
}
