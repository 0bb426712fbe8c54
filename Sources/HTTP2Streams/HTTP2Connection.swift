import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL

/// One HTTP/2 connection over TLS to a push service's host.
///
/// The streams are run by an `HTTP2StreamsHandler` at the frame level; a batch of requests crosses to
/// the connection's event loop once and is written with one flush. Once the connection retires
/// (GOAWAY, stream ids used up, closed) the pool replaces it.
final class HTTP2Connection: Sendable {
    let channel: any Channel
    private let handler: NIOLoopBound<HTTP2StreamsHandler>
    private let retiring: RetirementFlag

    private init(channel: any Channel, handler: NIOLoopBound<HTTP2StreamsHandler>, retiring: RetirementFlag) {
        self.channel = channel
        self.handler = handler
        self.retiring = retiring
    }

    /// True while new streams may start here.
    var isUsable: Bool { channel.isActive && !retiring.isSet }

    /// Connects to `host:port` (TLS with ALPN `h2`, SNI for names), connecting and the handshake each
    /// within `timeout`; throws `HTTP2ConnectionError.notHTTP2` if the server chooses another protocol
    /// than `h2` or none. Every request's deadline is `timeout` from when its batch is handed to the
    /// connection; at most `maximumInFlight` streams are open at once (fewer if the server says so).
    ///
    /// The whole pipeline is built by the channel initializer, on the event loop, before the
    /// connection is made: a handler added after `connect` returns can come too late, when the server's
    /// first SETTINGS frame has already been read and dropped at the end of the pipeline, and the
    /// HTTP/2 handler then takes the server's acknowledgement of its own SETTINGS for a protocol error
    /// that fails every request waiting on the connection. `connected` (tests) runs once the channel
    /// is connected, on its event loop, before this returns.
    static func connect(
        host: String,
        port: Int,
        tls: NIOSSLContext,
        timeout: Duration,
        maximumInFlight: Int,
        connected: (@Sendable (any Channel) async throws -> Void)? = nil
    ) async throws -> HTTP2Connection {
        let serverHostname = host.first?.isNumber == true || host.contains(":") ? nil : host
        let retiring = RetirementFlag()
        let (channel, handler, negotiation) = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(TimeAmount(timeout))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = HTTP2StreamsHandler(timeout: timeout, maximumInFlight: maximumInFlight, retiring: retiring)
                    let negotiated = channel.eventLoop.makePromise(of: Void.self)
                    let negotiation = ProtocolNegotiationHandler(negotiated: negotiated)
                    try channel.pipeline.syncOperations.addHandlers([
                        NIOSSLClientHandler(context: tls, serverHostname: serverHostname),
                        negotiation,
                        NIOHTTP2Handler(mode: .client, connectionConfiguration: Self.connection, streamConfiguration: Self.streams),
                        handler,
                    ])
                    let bound = NIOLoopBound(negotiation, eventLoop: channel.eventLoop)
                    let handshakeTimeout = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) { bound.value.timedOut() }
                    negotiated.futureResult.whenComplete { _ in handshakeTimeout.cancel() }
                    return (channel, NIOLoopBound(handler, eventLoop: channel.eventLoop), negotiated.futureResult)
                }
            }
        do {
            try await negotiation.get()
        } catch {
            try? await channel.close()
            throw error
        }
        try await connected?(channel)
        return HTTP2Connection(channel: channel, handler: handler, retiring: retiring)
    }

    /// NIOHTTP2 checks every header of every frame, both ways, byte by byte against RFC 9113's rules;
    /// with a provider token of a few hundred bytes on each push that was the largest part of the
    /// client's CPU. The requests' headers are built by the clients from values checked when they were
    /// stored (hex device tokens, topics, project ids, the tokens the clients hold), and of an answer
    /// only `:status`, `retry-after` and the body are read.
    static let connection: NIOHTTP2Handler.ConnectionConfiguration = {
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.headerBlockValidation = .disabled
        return connection
    }()

    /// NIOHTTP2's flood guard closes a connection that receives more than 200 RST_STREAM frames in 30
    /// seconds. It protects a server from clients that open and reset streams cheaply; here every reset
    /// names a stream this client opened (a reset of an idle stream is a connection error, RFC 9113
    /// §5.1), so resets cannot outnumber the requests sent, and a server may reset a stream it has
    /// answered to stop a body it does not need (RFC 9113 §8.1; nginx does it for every request whose
    /// body it did not read). A window of zero length lets no reset count against another.
    static let streams: NIOHTTP2Handler.StreamConfiguration = {
        var streams = NIOHTTP2Handler.StreamConfiguration()
        streams.streamResetFrameRateLimit.windowLength = .zero
        return streams
    }()

    /// Sends the requests and returns each one's answer or why it has none, in order.
    func send(_ requests: [HTTP2Request]) async -> [Result<HTTP2Answer, HTTP2ConnectionError>] {
        let promise = channel.eventLoop.makePromise(of: [Result<HTTP2Answer, HTTP2ConnectionError>].self)
        channel.eventLoop.execute { [handler] in
            handler.value.submit(requests, to: HTTP2Batch(count: requests.count, promise: promise))
        }
        // The batch completes every request (answer, deadline, or the connection's end); it never fails.
        return (try? await promise.futureResult.get()) ?? requests.map { _ in .failure(.closed) }
    }

    func close() async {
        try? await channel.close()
    }
}
