import APNs
import Foundation
import HeraldStore
import Logging
import Synchronization

/// Where the dispatcher's pushes go: an APNs client per stored credential, chosen by the device's
/// environment and topic — or, while no credential is stored at all, the log.
///
/// Credentials can change while Herald runs (`PUT /v1/apns/credentials/{name}`); `refresh()` compares
/// the stored set's fingerprint (count and newest update) and rebuilds the clients when it moved.
final class PushTransport: Sendable {
    private struct Entry: Sendable {
        var info: APNsCredentialInfo
        var client: APNsClient
    }

    private struct State: Sendable {
        var fingerprint: String?
        var entries: [Entry] = []
    }

    private let store: APNsCredentialStore
    private let settings: PushSettings
    private let logger: Logger
    private let state = Mutex(State())

    init(store: APNsCredentialStore, settings: PushSettings, logger: Logger) {
        self.store = store
        self.settings = settings
        self.logger = logger
    }

    /// True while no credential is stored: pushes are logged, not sent.
    var isLoggingOnly: Bool { state.withLock { $0.entries.isEmpty } }

    /// Reloads the credentials if they changed since the last look.
    func refresh() async throws {
        let fingerprint = try await store.fingerprint()
        guard state.withLock({ $0.fingerprint }) != fingerprint else { return }
        var entries: [Entry] = []
        for credential in try await store.allWithSecrets() {
            do {
                entries.append(Entry(info: credential.info, client: try makeClient(credential)))
            } catch {
                logger.error("an APNs credential cannot be used", metadata: ["credential": "\(credential.info.name)", "error": "\(error)"])
            }
        }
        let old = state.withLock { state -> [Entry] in
            let old = state.entries
            state.entries = entries
            state.fingerprint = fingerprint
            return old
        }
        for entry in old { await entry.client.shutdown() }
        if entries.isEmpty {
            logger.notice("no APNs credentials stored: pushes are written to the log, not sent (PUT /v1/apns/credentials/{name})")
        } else {
            logger.info("APNs credentials loaded", metadata: ["credentials": "\(entries.map(\.info.name).joined(separator: ", "))"])
        }
    }

    /// Sends `push` with the credential for its environment and topic.
    func send(_ push: APNsPush, environment: String) async -> APNsResult {
        await send([(push, environment)])[0].result
    }

    /// Sends each push with the credential for its environment and topic — each credential's share as
    /// one batch — and returns every result and its stream's duration, in order.
    func send(_ pushes: [(push: APNsPush, environment: String)]) async -> [(result: APNsResult, elapsed: Duration)] {
        let entries = state.withLock { $0.entries }
        guard !entries.isEmpty else {
            return pushes.map { push, environment in
                logger.info(
                    "push (logging transport)",
                    metadata: [
                        "type": "\(push.pushType)", "topic": "\(push.topic)", "environment": "\(environment)",
                        "payload": "\(String(decoding: push.payload, as: UTF8.self))",
                    ]
                )
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
                let client = entries[entry].client
                let batch = indices.map { pushes[$0].push }
                group.addTask { Array(zip(indices, await client.send(batch))) }
            }
            for await share in group {
                for (index, result) in share { results[index] = result }
            }
        }
        return results.map { $0! }
    }

    func shutdown() async {
        let entries = state.withLock { state -> [Entry] in
            defer { state.entries = [] }
            return state.entries
        }
        for entry in entries { await entry.client.shutdown() }
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
            let key = try ES256Key(pem: String(decoding: credential.secret, as: UTF8.self))
            authentication = .token(ProviderTokenCache(key: key, keyID: info.keyID ?? "", teamID: info.teamID ?? ""))
        case .certificate:
            authentication = .certificate(try PKCS12Bundle(bytes: credential.secret, password: credential.password ?? ""))
        }
        return try APNsClient(configuration: configuration, authentication: authentication, logger: logger)
    }
}
