import AsyncHTTPClient
import FCM
import Foundation
import HeraldCore
import HeraldStore
import Logging
import Synchronization

/// Where the dispatcher's FCM pushes go: a client per stored service account, chosen by the device's
/// project (the oldest usable credential when the device names none) — or, while none is stored, the
/// log. Each client keeps its own HTTP/2 connections to FCM; the clients share one AsyncHTTPClient for
/// their token endpoints.
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
                    timeout: settings.requestTimeout,
                    additionalTrustRootFiles: settings.pushCAFile.map { [$0] } ?? [],
                    maximumInFlight: settings.concurrency
                )
                let client = try FCMClient(account: account, configuration: configuration, http: http, logger: logger)
                entries.append(Entry(info: info, client: .success(client)))
            } catch {
                logger.error("an FCM credential cannot be used", metadata: ["credential": "\(info.name)", "error": "\(error)"])
                entries.append(Entry(info: info, client: .failure(Unusable(reason: "FCM credential '\(info.name)' cannot be used: \(error)"))))
            }
        }
        let old = state.withLock { state -> [Entry] in
            defer {
                state.entries = entries
                state.fingerprint = fingerprint
            }
            return state.entries
        }
        for case .success(let client) in old.map(\.client) { await client.shutdown() }
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
        var results = [(result: PushResult, elapsed: Duration)?](repeating: nil, count: messages.count)
        var shares: [Int: [Int]] = [:]  // entry → indices of its messages
        for (index, message) in messages.enumerated() {
            // A device names its project; without one, it belongs to the oldest usable credential's.
            let project = message.address.topic
            let entry =
                project.isEmpty
                ? entries.firstIndex { if case .success = $0.client { true } else { false } } ?? entries.indices.first
                : entries.firstIndex { $0.info.projectID == project }
            if let entry {
                shares[entry, default: []].append(index)
            } else {
                results[index] = (PushResult(.permanent, reason: "no FCM credential for project '\(project)'"), .zero)
            }
        }
        let deadline = ContinuousClock.now + settings.batchDeadline
        await withTaskGroup(of: [(Int, (result: PushResult, elapsed: Duration))].self) { group in
            for (entry, indices) in shares {
                let name = entries[entry].info.name
                switch entries[entry].client {
                case .failure(let unusable):
                    for index in indices { results[index] = (PushResult(.permanent, reason: unusable.reason), .zero) }
                case .success(let client):
                    let batch = indices.map { Self.message(for: messages[$0], now: now) }
                    group.addTask {
                        zip(indices, await client.send(batch, deadline: deadline)).map { index, sent in
                            (index, (PushResult(sent.outcome, credential: name), sent.elapsed))
                        }
                    }
                }
            }
            for await share in group {
                for (index, result) in share { results[index] = result }
            }
        }
        return results.map { $0! }
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
        let entries = state.withLock { state -> [Entry] in
            defer { state.entries = [] }
            return state.entries
        }
        for case .success(let client) in entries.map(\.client) { await client.shutdown() }
        try? await http.shutdown()
    }
}
