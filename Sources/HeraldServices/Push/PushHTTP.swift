import AsyncHTTPClient
import HeraldCore
import HeraldStore
import Logging
import NIOSSL

/// What the FCM and Web Push transports share: their HTTP client (Web Push's requests and FCM's token
/// endpoint), Web Push's bounded concurrency, and the
/// log that stands in for a service without credentials.
enum PushHTTP {
    /// An HTTP client for a push service: HTTP/2 where the server offers it (ALPN), connections kept
    /// for reuse, and the extra trust roots of `HERALD_PUSH_CA_FILE`.
    static func makeClient(_ settings: PushSettings) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        var tls = TLSConfiguration.makeClientConfiguration()
        if let file = settings.pushCAFile { tls.additionalTrustRoots = [.file(file)] }
        configuration.tlsConfiguration = tls
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(8, settings.concurrency / 16)
        // A push service answers; it never sends a push elsewhere.
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// What a push not started before its batch's deadline gets (`PushSettings.batchDeadline`).
    static let notSent = (result: PushResult(.transient, reason: "not sent: the batch's time ran out"), elapsed: Duration.zero)

    /// `body` for each of `items`, at most `limit` at once; the results in order.
    static func map<Item: Sendable, Result: Sendable>(
        _ items: [Item],
        limit: Int,
        _ body: @escaping @Sendable (Item) async -> Result
    ) async -> [Result] {
        var results = [Result?](repeating: nil, count: items.count)
        await withTaskGroup(of: (Int, Result).self) { group in
            var next = 0
            while next < items.count, next < limit {
                let (index, item) = (next, items[next])
                group.addTask { (index, await body(item)) }
                next += 1
            }
            for await (index, result) in group {
                results[index] = result
                if next < items.count {
                    let (index, item) = (next, items[next])
                    group.addTask { (index, await body(item)) }
                    next += 1
                }
            }
        }
        return results.map { $0! }
    }

    /// A push written to the log instead of sent (no credential stored for its service): counted as
    /// delivered, as the APNs transport does. The payload is logged only when asked: it holds what
    /// the user is told.
    static func logged(_ message: PushMessage, payload: [UInt8], settings: PushSettings, logger: Logger) -> (result: PushResult, elapsed: Duration) {
        var metadata: Logger.Metadata = [
            "service": "\(message.address.service.rawValue)", "type": "\(message.isAlert ? "alert" : "refresh")",
            "payload_bytes": "\(payload.count)",
        ]
        if settings.logPayloads { metadata["payload"] = "\(String(decoding: payload, as: UTF8.self))" }
        logger.info("push (logging transport)", metadata: metadata)
        return (PushResult(.delivered, reason: "logged: no \(message.address.service.displayName) credentials"), .zero)
    }
}

extension PushMessage {
    var isAlert: Bool {
        if case .alert = content { return true }
        return false
    }
}
