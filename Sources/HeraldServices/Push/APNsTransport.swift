import APNs
import Foundation
import HeraldCore
import HeraldCrypto
import HeraldStore
import Logging
import Synchronization

/// Where the dispatcher's APNs pushes go: an APNs client per stored credential, chosen by the device's
/// environment and topic — or, while no credential is stored at all, the log.
///
/// Credentials can change while Herald runs (`PUT /v1/apns/credentials/{name}`); `refresh()` compares
/// the stored set's fingerprint (count and newest update) and rebuilds the clients when it moved.
public final class APNsTransport: PushServiceTransport {
    /// A stored credential, with its client — or, for one that cannot be used, why: its pushes fail
    /// with that reason (listed among the failures) while the other credentials keep pushing.
    private struct Entry: Sendable {
        var info: APNsCredentialInfo
        var client: Result<APNsClient, Unusable>
    }

    private struct Unusable: Error {
        var reason: String
    }

    private struct State: Sendable {
        var fingerprint: String?
        var entries: [Entry] = []
    }

    private let store: APNsCredentialStore
    private let settings: PushSettings
    private let logger: Logger
    private let state = Mutex(State())

    public var service: PushService { .apns }

    public init(store: APNsCredentialStore, settings: PushSettings, logger: Logger) {
        self.store = store
        self.settings = settings
        self.logger = logger
    }

    /// True while no credential is stored: pushes are logged, not sent.
    public var isLoggingOnly: Bool { state.withLock { $0.entries.isEmpty } }

    /// Reloads the credentials if they changed since the last look.
    public func refresh() async throws {
        let fingerprint = try await store.fingerprint()
        guard state.withLock({ $0.fingerprint }) != fingerprint else { return }
        let (usable, unreadable) = try await store.allWithSecrets()
        // Usable credentials first: a push takes the first credential for its environment and topic.
        var entries: [Entry] = []
        var broken: [Entry] = []
        // Logged once per change of the stored set: refresh rebuilds nothing until it changes.
        for credential in usable {
            do {
                entries.append(Entry(info: credential.info, client: .success(try makeClient(credential))))
            } catch {
                logger.error("an APNs credential cannot be used", metadata: ["credential": "\(credential.info.name)", "error": "\(error)"])
                let reason = "APNs credential '\(credential.info.name)' cannot be used: \(error)"
                broken.append(Entry(info: credential.info, client: .failure(Unusable(reason: reason))))
            }
        }
        for info in unreadable {
            logger.error("an APNs credential cannot be opened; its pushes fail until it is uploaded again", metadata: ["credential": "\(info.name)"])
            let reason = "APNs credential '\(info.name)' does not open with this server's secret key; upload it again"
            broken.append(Entry(info: info, client: .failure(Unusable(reason: reason))))
        }
        entries += broken
        let old = state.withLock { state -> [Entry] in
            let old = state.entries
            state.entries = entries
            state.fingerprint = fingerprint
            return old
        }
        for case .success(let client) in old.map(\.client) { await client.shutdown() }
        if entries.isEmpty {
            logger.notice("no APNs credentials stored: pushes are written to the log, not sent (PUT /v1/apns/credentials/{name})")
        } else {
            logger.info("APNs credentials loaded", metadata: ["credentials": "\(entries.map(\.info.name).joined(separator: ", "))"])
        }
    }

    public func send(_ messages: [PushMessage]) async -> [(result: PushResult, elapsed: Duration)] {
        await send(messages.map { (Self.push(for: $0), $0.address.environment) }).map { (PushResult($0.result), $0.elapsed) }
    }

    /// The APNs request for `message`: a background push at priority 5 collapsed per user for a
    /// refresh; an alert push for an alert.
    static func push(for message: PushMessage) -> APNsPush {
        switch message.content {
        case .refresh(let channels, let notificationID):
            return APNsPush(
                deviceToken: message.address.token,
                topic: message.address.topic,
                pushType: "background",
                priority: 5,
                expiration: message.expiration,
                collapseID: message.refreshCollapseKey,
                payload: RefreshPayload.make(channels: channels, badge: channels.reduce(0) { $0 + $1.unread }, notificationID: notificationID)
            )
        case .alert(let content, let priority, let collapseID):
            return APNsPush(
                deviceToken: message.address.token,
                topic: message.address.topic,
                pushType: "alert",
                priority: priority == .low ? 5 : 10,
                expiration: message.expiration,
                collapseID: collapseID,
                payload: AlertPayload.make(content)
            )
        }
    }

    /// Sends each push with the credential for its environment and topic — each credential's share as
    /// one batch — and returns every result and its stream's duration, in order.
    func send(_ pushes: [(push: APNsPush, environment: String)]) async -> [(result: APNsResult, elapsed: Duration)] {
        let entries = state.withLock { $0.entries }
        guard !entries.isEmpty else {
            return pushes.map { push, environment in
                // The payload holds what the user is told (an alert's text): logged only when asked.
                var metadata: Logger.Metadata = [
                    "type": "\(push.pushType)", "topic": "\(push.topic)", "environment": "\(environment)",
                    "payload_bytes": "\(push.payload.count)",
                ]
                if settings.logPayloads { metadata["payload"] = "\(String(decoding: push.payload, as: UTF8.self))" }
                logger.info("push (logging transport)", metadata: metadata)
                return (APNsResult(outcome: .delivered, status: nil, reason: "logged: no APNs credentials"), .zero)
            }
        }
        var results = [(result: APNsResult, elapsed: Duration)?](repeating: nil, count: pushes.count)
        var shares: [Int: [Int]] = [:]  // entry → indices of its pushes
        for (index, (push, environment)) in pushes.enumerated() {
            if let entry = entries.firstIndex(where: { $0.info.environment == environment && $0.info.topic == push.topic }) {
                shares[entry, default: []].append(index)
            } else {
                let reason = "no APNs credential for topic '\(push.topic)' in \(environment)"
                results[index] = (APNsResult(outcome: .permanent, status: nil, reason: reason), .zero)
            }
        }
        await withTaskGroup(of: [(Int, (result: APNsResult, elapsed: Duration))].self) { group in
            for (entry, indices) in shares {
                let client: APNsClient
                switch entries[entry].client {
                case .success(let usable):
                    client = usable
                case .failure(let unusable):
                    for index in indices { results[index] = (APNsResult(outcome: .permanent, status: nil, reason: unusable.reason), .zero) }
                    continue
                }
                let batch = indices.map { pushes[$0].push }
                group.addTask { Array(zip(indices, await client.send(batch))) }
            }
            for await share in group {
                for (index, result) in share { results[index] = result }
            }
        }
        return results.map { $0! }
    }

    public func shutdown() async {
        let entries = state.withLock { state -> [Entry] in
            defer { state.entries = [] }
            return state.entries
        }
        for case .success(let client) in entries.map(\.client) { await client.shutdown() }
    }

    private func makeClient(_ credential: APNsCredentialSecrets) throws -> APNsClient {
        let info = credential.info
        let url = settings.apnsURL ?? (info.environment == "production" ? APNsClient.productionURL : APNsClient.sandboxURL)
        let configuration = APNsClient.Configuration(
            baseURL: url,
            additionalTrustRootFiles: settings.apnsCAFile.map { [$0] } ?? [],
            timeout: settings.requestTimeout,
            maximumInFlight: settings.concurrency
        )
        let authentication: APNsAuthentication
        switch info.kind {
        case .token:
            let key = try P256Key(pem: String(decoding: credential.secret, as: UTF8.self))
            authentication = .token(ProviderTokenCache(key: key, keyID: info.keyID ?? "", teamID: info.teamID ?? ""))
        case .certificate:
            authentication = .certificate(try PKCS12Bundle(bytes: credential.secret, password: credential.password ?? ""))
        }
        return try APNsClient(configuration: configuration, authentication: authentication, logger: logger)
    }
}
