import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// One HTTP/2 connection over TLS to an APNs host, with a stream per push.
///
/// Each push goes out as HEADERS and DATA with a single flush (AsyncHTTPClient flushed head, body and
/// end separately: three TLS writes per push, most of the client's CPU). Streams beyond the server's
/// `SETTINGS_MAX_CONCURRENT_STREAMS` are held by NIOHTTP2 until others finish. When the server sends
/// GOAWAY or the connection drops, unanswered streams fail (the caller retries them on a new
/// connection).
final class APNsConnection: Sendable {
    let channel: any Channel
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    private let authority: String

    private init(channel: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, authority: String) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.authority = authority
    }

    var isActive: Bool { channel.isActive }

    /// Connects to `host:port` (TLS with ALPN `h2`, SNI for names) within `timeout`.
    static func connect(host: String, port: Int, tls: NIOSSLContext, timeout: Duration) async throws -> APNsConnection {
        let serverHostname = host.first?.isNumber == true || host.contains(":") ? nil : host
        let channelAndMultiplexer = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(TimeAmount(timeout))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverHostname))
                }
            }
            .connect(host: host, port: port)
            .flatMap { channel in
                channel.eventLoop.makeCompletedFuture {
                    let multiplexer = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .client, connectionConfiguration: .init(), streamConfiguration: .init()
                    ) { stream in
                        // APNs never opens streams of its own.
                        stream.close()
                    }
                    return (channel, multiplexer)
                }
            }
            .get()
        return APNsConnection(
            channel: channelAndMultiplexer.0, multiplexer: channelAndMultiplexer.1, authority: port == 443 ? host : "\(host):\(port)"
        )
    }

    /// Sends one request and returns the status and body, or throws when no answer arrives in time.
    func send(path: String, headers: HTTPHeaders, body: [UInt8], timeout: Duration) async throws -> (status: Int, body: ByteBuffer) {
        let eventLoop = channel.eventLoop
        let promise = OncePromise(eventLoop.makePromise(of: APNsStreamHandler.Answer.self))
        var head = HTTPRequestHead(version: .http2, method: .POST, uri: path, headers: headers)
        head.headers.replaceOrAdd(name: "host", value: authority)
        let payload = ByteBuffer(bytes: body)
        multiplexer.createStreamChannel { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandlers([
                    HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https),
                    APNsStreamHandler(promise: promise),
                ])
            }
        }.whenComplete { result in
            switch result {
            case .success(let stream):
                let deadline = eventLoop.scheduleTask(in: TimeAmount(timeout)) {
                    promise.fail(APNsConnectionError.timeout)
                    stream.close(promise: nil)
                }
                promise.futureResult.whenComplete { _ in deadline.cancel() }
                stream.closeFuture.whenComplete { _ in promise.fail(APNsConnectionError.closed) }
                stream.write(HTTPClientRequestPart.head(head), promise: nil)
                stream.write(HTTPClientRequestPart.body(.byteBuffer(payload)), promise: nil)
                stream.writeAndFlush(HTTPClientRequestPart.end(nil)).whenFailure { promise.fail($0) }
            case .failure(let error):
                promise.fail(error)
            }
        }
        let answer = try await promise.futureResult.get()
        return (answer.status, answer.body)
    }

    func close() async {
        try? await channel.close()
    }
}

enum APNsConnectionError: Error, CustomStringConvertible {
    case timeout
    case closed

    var description: String {
        switch self {
        case .timeout: return "timeout: no answer before the deadline"
        case .closed: return "the stream closed before an answer (GOAWAY or a dropped connection)"
        }
    }
}

/// Collects one stream's response and completes the promise once.
private final class APNsStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    struct Answer: Sendable {
        var status: Int
        var body: ByteBuffer
    }

    private let promise: OncePromise<Answer>
    private var status: Int?
    private var body = ByteBuffer()

    init(promise: OncePromise<Answer>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): status = Int(head.status.code)
        case .body(var buffer): body.writeBuffer(&buffer)
        case .end:
            if let status { promise.succeed(Answer(status: status, body: body)) } else { promise.fail(APNsConnectionError.closed) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(APNsConnectionError.closed)
    }
}

/// A promise that the first of several racing outcomes (answer, deadline, closed stream) completes;
/// the others are ignored.
final class OncePromise<Value: Sendable>: Sendable {
    private let promise: EventLoopPromise<Value>
    private let done = NIOLockedValueBox(false)

    init(_ promise: EventLoopPromise<Value>) {
        self.promise = promise
    }

    var futureResult: EventLoopFuture<Value> { promise.futureResult }

    func succeed(_ value: Value) {
        if claim() { promise.succeed(value) }
    }

    func fail(_ error: any Error) {
        if claim() { promise.fail(error) }
    }

    private func claim() -> Bool {
        done.withLockedValue { done in
            defer { done = true }
            return !done
        }
    }
}
