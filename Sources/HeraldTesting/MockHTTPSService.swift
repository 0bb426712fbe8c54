import Hummingbird
import HummingbirdHTTP2
import HummingbirdTLS
import Logging
import NIOSSL
import ServiceLifecycle

/// A Hummingbird router served over TLS (HTTP/2 by ALPN, HTTP/1.1 otherwise; or HTTP/1.1 only) on a
/// loopback port, with the test credentials' certificate for 127.0.0.1: what the mock push services
/// run on.
struct MockHTTPSService: Sendable {
    let port: Int
    /// The certificate clients must trust.
    let trustRootFile: String
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    static func start<Context: RequestContext>(
        _ router: Router<Context>,
        label: String,
        credentials: TestCredentials,
        http1Only: Bool = false
    ) async throws -> MockHTTPSService where Context.Source == ApplicationRequestContextSource {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(credentials.serverCertificateFile).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: credentials.serverKeyFile, format: .pem))
        )
        if http1Only { tls.applicationProtocols = ["http/1.1"] }
        let listening = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router,
            server: http1Only ? try .tls(.http1(), tlsConfiguration: tls) : try .http2Upgrade(tlsConfiguration: tls),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in listening.continuation.yield(channel.localAddress?.port ?? 0) },
            logger: Logger(label: label)
        )
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: Logger(label: label))
        let task = Task {
            // A server that fails to start ends the stream, so the caller fails instead of waiting.
            defer { listening.continuation.finish() }
            try await group.run()
        }
        var port = 0
        for await bound in listening.stream {
            port = bound
            break
        }
        guard port > 0 else {
            _ = try? await task.value
            throw MockStartFailure(label: label)
        }
        return MockHTTPSService(port: port, trustRootFile: credentials.serverCertificateFile, group: group, task: task)
    }

    /// Stops accepting, and returns once the connections open now have closed.
    func shutdown() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}

struct MockStartFailure: Error, CustomStringConvertible {
    var label: String
    var description: String { "\(label) did not start listening" }
}
