import AsyncHTTPClient
import FCM
import Foundation
import HeraldCore
import HeraldStore
import Logging
import Synchronization

/// Where the dispatcher's FCM pushes go: a client per stored service account, chosen by the device's
/// project (the first credential when the device names none) — or, while none is stored, the log.
///
/// Every client shares one AsyncHTTPClient: FCM is one host, reached over HTTP/2 with its connections
/// kept, and each message is a stream.
public final class FCMTransport: PushServiceTransport {
    private struct Entry: Sendable {
        var info: FCMCredentialInfo
        var client: Result<FCMClient, Unusable>
    }

    private struct Unusable: Error {
        var reason: String
    }

    private struct State: Sendable {
        var fingerprint: String?
        var entries: [Entry] = []
    }

    private let store: FCMCredentialStore
    private let settings: PushSettings
    private let logger: Logger
    private let http: HTTPClient
    private let state = Mutex(State())

    public var service: PushService { .fcm }

    public init(store: FCMCredentialStore, settings: PushSettings, logger: Logger) {
        self.store = store
        self.settings = settings
        self.logger = logger
        self.http = PushHTTP.makeClient(settings)
    }

    public func refresh() async throws {
        let fingerprint = try await store.fingerprint()
        guard state.withLock({ $0.fingerprint }) != fingerprint else { return }
        var entries: [Entry] = []
        for (info, keyFile) in try await store.all() {
            guard let keyFile else {
                logger.error(
                    "an FCM credential cannot be opened; its pushes fail until it is uploaded again",
                    metadata: ["credential": "\(info.name)"]
                )
                let reason = "FCM credential '\(info.name)' does not open with this server's secret key; upload it again"
                entries.append(Entry(info: info, client: .failure(Unusable(reason: reason))))
                continue
            }
            do {
                let account = try FCMServiceAccount(json: keyFile)
                let configuration = FCMClient.Configuration(
                    baseURL: settings.fcmURL ?? FCMClient.Configuration().baseURL,
                    timeout: settings.requestTimeout
                )
                entries.append(
                    Entry(info: info, client: .success(FCMClient(account: account, configuration: configuration, http: http, logger: logger)))
                )
            } catch {
                logger.error("an FCM credential cannot be used", metadata: ["credential": "\(info.name)", "error": "\(error)"])
                entries.append(Entry(info: info, client: .failure(Unusable(reason: "FCM credential '\(info.name)' cannot be used: \(error)"))))
            }
        }
        state.withLock { state in
            state.entries = entries
            state.fingerprint = fingerprint
        }
        if entries.isEmpty {
            logger.notice("no FCM credentials stored: FCM pushes are written to the log, not sent (PUT /v1/fcm/credentials/{name})")
        } else {
            logger.info("FCM credentials loaded", metadata: ["credentials": "\(entries.map(\.info.name).joined(separator: ", "))"])
        }
    }

    public func send(_ messages: [PushMessage]) async -> [(result: PushResult, elapsed: Duration)] {
        let entries = state.withLock { $0.entries }
        let now = Int64(Date().timeIntervalSince1970)
        guard !entries.isEmpty else {
            return messages.map { PushHTTP.logged($0, payload: Self.message(for: $0, now: now).body, settings: settings, logger: logger) }
        }
        let deadline = ContinuousClock.now + settings.batchDeadline
        return await PushHTTP.map(messages, limit: settings.concurrency) { message in
            guard ContinuousClock.now < deadline else { return PushHTTP.notSent }
            // A device names its project; without one, it belongs to the oldest usable credential's.
            let project = message.address.topic
            let entry =
                project.isEmpty
                ? entries.first { if case .success = $0.client { true } else { false } } ?? entries.first
                : entries.first { $0.info.projectID == project }
            guard let entry else {
                return (PushResult(.permanent, reason: "no FCM credential for project '\(project)'"), .zero)
            }
            switch entry.client {
            case .failure(let unusable):
                return (PushResult(.permanent, reason: unusable.reason), .zero)
            case .success(let client):
                let start = ContinuousClock.now
                let outcome = await client.send(Self.message(for: message, now: now))
                return (PushResult(outcome, credential: entry.info.name), ContinuousClock.now - start)
            }
        }
    }

    /// FCM's largest message payload.
    static let maximumBytes = 4096
    /// FCM keeps a message four weeks at most (`android.ttl`).
    static let maximumTimeToLive = 28 * 86_400

    /// The FCM message for `message`: a refresh is data only (`herald`, the same object as APNs') at
    /// normal priority, collapsed per user, so that Android wakes the app without showing anything;
    /// an alert adds the notification shown, at high priority (normal for `priority: low`).
    static func message(for message: PushMessage, now: Int64) -> FCMMessage {
        let token = message.address.token
        let ttl = min(message.timeToLive(now: now), maximumTimeToLive)
        switch message.content {
        case .refresh(let channels, let notificationID):
            let herald = RefreshPayload.make(
                channels: channels,
                badge: channels.reduce(0) { $0 + $1.unread },
                notificationID: notificationID,
                format: .heraldObject,
                maximumBytes: maximumBytes - 512
            )
            return FCMMessage(
                token: token,
                data: [("herald", String(decoding: herald, as: UTF8.self))],
                priority: .normal,
                collapseKey: message.refreshCollapseKey,
                timeToLive: ttl
            )
        case .alert(let content, let priority, let collapseID):
            return AlertPayload.makeFCM(content, maximumBytes: maximumBytes + token.utf8.count, size: { $0.body.count }) { title, body, data in
                FCMMessage(
                    token: token,
                    data: data,
                    notification: .init(title: title, body: body, sound: content.sound),
                    priority: priority == .low ? .normal : .high,
                    collapseKey: collapseID,
                    timeToLive: ttl
                )
            }
        }
    }

    public func shutdown() async {
        try? await http.shutdown()
    }
}
