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
/// database, replaced by an upload). A key that does not open fails the pushes with the reason. The
/// client keeps HTTP/2 connections to each push service; `http` serves those without HTTP/2.
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
            let configuration = WebPushClient.Configuration(
                timeout: settings.requestTimeout,
                additionalTrustRootFiles: settings.pushCAFile.map { [$0] } ?? [],
                maximumInFlight: settings.concurrency
            )
            do {
                client = .success(try WebPushClient(key: key, subject: subject, configuration: configuration, http: http, logger: logger))
            } catch {
                logger.error("the Web Push client cannot be made", metadata: ["error": "\(error)"])
                client = .failure(Unusable(reason: "the Web Push client cannot be made: \(error)"))
            }
        } else if key == nil {
            logger.error("the VAPID key cannot be opened; Web Push fails until a key is uploaded (PUT /v1/webpush/key)")
            client = .failure(Unusable(reason: "the VAPID key does not open with this server's secret key; upload one"))
        } else {
            logger.notice("HERALD_VAPID_SUBJECT is not set: pushes to browsers fail until it names your contact (mailto: or https:)")
            client = .failure(Unusable(reason: "HERALD_VAPID_SUBJECT is not set: push services need the operator's contact"))
        }
        let old = state.withLock { state -> Result<WebPushClient, Unusable>? in
            defer {
                state.client = client
                state.fingerprint = sealed
            }
            return state.client
        }
        if case .success(let replaced) = old { await replaced.shutdown() }
    }

    public func send(_ messages: [PushMessage]) async -> [(result: PushResult, elapsed: Duration)] {
        let deadline = ContinuousClock.now + settings.batchDeadline
        let client: WebPushClient
        switch state.withLock({ $0.client }) {
        case .success(let held): client = held
        case .failure(let unusable): return messages.map { _ in (PushResult(.permanent, reason: unusable.reason), .zero) }
        case nil: return messages.map { _ in (PushResult(.transient, reason: "the VAPID key is not loaded yet"), .zero) }
        }
        let now = Int64(Date().timeIntervalSince1970)
        var results = [(result: PushResult, elapsed: Duration)?](repeating: nil, count: messages.count)
        var sendable: [(index: Int, message: WebPushClient.Message)] = []
        for (index, message) in messages.enumerated() {
            guard let keys = message.address.webPushKeys, let endpoint = URL(string: message.address.token) else {
                results[index] = (PushResult(.permanent, reason: "not a Web Push subscription"), .zero)
                continue
            }
            let (payload, options) = Self.payload(for: message, now: now)
            let subscription = WebPushSubscription(endpoint: endpoint, p256dh: keys.p256dh, auth: keys.auth)
            sendable.append((index, WebPushClient.Message(payload: payload, subscription: subscription, options: options)))
        }
        for (item, sent) in zip(sendable, await client.send(sendable.map(\.message), deadline: deadline)) {
            results[item.index] = (PushResult(sent.outcome), sent.elapsed)
        }
        return results.map { $0! }
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
        let client = state.withLock { state -> Result<WebPushClient, Unusable>? in
            defer { state.client = nil }
            return state.client
        }
        if case .success(let held) = client { await held.shutdown() }
        try? await http.shutdown()
    }
}
