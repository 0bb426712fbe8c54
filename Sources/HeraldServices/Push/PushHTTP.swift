import AsyncHTTPClient
import HeraldCore
import HeraldStore
import Logging
import NIOSSL

/// What the FCM and Web Push transports share: their AsyncHTTPClient (FCM's token endpoint, push
/// services without HTTP/2), and the log that stands in for a service without credentials.
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
