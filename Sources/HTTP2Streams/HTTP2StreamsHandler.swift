import NIOCore
import NIOHPACK
import NIOHTTP2

/// One request as a connection sends it: the whole header block (pseudo-headers included) and the body.
public struct HTTP2Request: Sendable {
    public var headers: HPACKHeaders
    public var body: ByteBuffer

    public init(headers: HPACKHeaders, body: ByteBuffer) {
        self.headers = headers
        self.body = body
    }
}

/// What came back for one request: the status, `Retry-After` when the answer had one, the body, and
/// how long the stream was open. (Of an answer's headers only these two are read.)
public struct HTTP2Answer: Sendable {
    public var status: Int
    public var retryAfter: String?
    public var body: ByteBuffer
    public var elapsed: Duration
}

public enum HTTP2ConnectionError: Error, Sendable, CustomStringConvertible {
    case timeout
    case closed
    case failed(String)
    /// The request never left: the connection failed or retired while it waited for a stream. The
    /// server cannot have seen it, so it is safe to send again at once on another connection.
    case notSent(String)
    /// The server chose another protocol than HTTP/2 in the TLS handshake (ALPN), or none: it cannot
    /// be sent to on this stack.
    case notHTTP2(String?)

    public var description: String {
        switch self {
        case .timeout: return "timeout: no answer before the deadline"
        case .closed: return "the stream closed before an answer (GOAWAY or a dropped connection)"
        case .failed(let reason): return reason
        case .notSent(let reason): return "not sent: \(reason)"
        case .notHTTP2(let chosen): return "the server does not speak HTTP/2 over TLS (ALPN: \(chosen ?? "none"))"
        }
    }
}

/// The outcomes of one batch of requests on one connection, completed once every request has one.
/// Confined to the connection's event loop.
final class HTTP2Batch {
    private var outcomes: [Result<HTTP2Answer, HTTP2ConnectionError>]
    private var remaining: Int
    private let promise: EventLoopPromise<[Result<HTTP2Answer, HTTP2ConnectionError>]>
    /// Fails what is left of the batch when it is due.
    var deadline: Scheduled<Void>?

    init(count: Int, promise: EventLoopPromise<[Result<HTTP2Answer, HTTP2ConnectionError>]>) {
        outcomes = Array(repeating: .failure(.closed), count: count)
        remaining = count
        self.promise = promise
        if count == 0 { promise.succeed([]) }
    }

    func complete(_ index: Int, _ outcome: Result<HTTP2Answer, HTTP2ConnectionError>) {
        outcomes[index] = outcome
        remaining -= 1
        if remaining == 0 {
            deadline?.cancel()
            promise.succeed(outcomes)
        }
    }
}

/// Runs the streams of one HTTP/2 connection at the frame level, below which sits `NIOHTTP2Handler`:
/// what the APNs and FCM clients send their pushes over.
///
/// Why not a stream channel per request (NIOHTTP2's multiplexer, and the HTTP/1 codec on each): that
/// costs a channel, a pipeline and several handlers per request, and was most of the APNs client's
/// CPU. Here a request is two frames written straight to the connection — HEADERS and DATA — and its
/// answer is matched by stream id. Streams beyond the server's `SETTINGS_MAX_CONCURRENT_STREAMS` (or the
/// client's own bound, whichever is lower) wait here; none is sent before the server's first SETTINGS
/// frame. A batch has one deadline, from when it is handed over: what is unanswered then fails as
/// `timeout` (and its open streams are reset).
/// On GOAWAY, streams the server did not process fail as `closed` (the caller retries them on a new
/// connection) and the connection takes no new ones.
final class HTTP2StreamsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct Stream {
        var batch: HTTP2Batch
        var index: Int
        var started: NIODeadline
        var status: Int?
        var retryAfter: String?
        var body: ByteBuffer?
    }

    private struct Waiting {
        var batch: HTTP2Batch
        var index: Int
        var request: HTTP2Request
    }

    private let timeout: TimeAmount
    private let clientLimit: Int
    /// Set once no new stream may start here (GOAWAY, stream ids used up, closed); read by the client
    /// from other threads to replace the connection.
    let retiring: RetirementFlag
    /// Streams open at once, at most: none until the server's first SETTINGS, then the lower of its
    /// limit and the client's.
    private var limit = 0
    private var settingsReceived = false
    private var context: ChannelHandlerContext?
    private var streams: [Int32: Stream] = [:]
    private var waiting = CircularBuffer<Waiting>()
    private var nextStreamID: Int32 = 1
    private var needsFlush = false
    private var window = HTTP2ConnectionWindow()

    init(timeout: Duration, maximumInFlight: Int, retiring: RetirementFlag) {
        self.timeout = TimeAmount(timeout)
        self.clientLimit = maximumInFlight
        self.retiring = retiring
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        failEverything(.closed)
        self.context = nil
    }

    /// Queues the batch's requests and starts as many streams as the limits allow.
    func submit(_ requests: [HTTP2Request], to batch: HTTP2Batch) {
        guard let context, !retiring.isSet else {
            for index in requests.indices { batch.complete(index, .failure(.notSent("the connection retired"))) }
            return
        }
        if !requests.isEmpty {
            batch.deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in expire(batch) }
        }
        for (index, request) in requests.enumerated() {
            waiting.append(Waiting(batch: batch, index: index, request: request))
        }
        startWaiting()
        flushIfNeeded()
    }

    private func startWaiting() {
        guard let context else { return }
        while streams.count < limit, let next = waiting.popFirst() {
            guard nextStreamID < Int32.max - 1 else {
                // Stream ids are spent: this connection retires and the rest go to a new one.
                waiting.prepend(next)
                retire(context: context)
                return
            }
            let id = nextStreamID
            nextStreamID += 2
            streams[id] = Stream(batch: next.batch, index: next.index, started: .now())
            let streamID = HTTP2StreamID(id)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: next.request.headers)))), promise: nil)
            // A write refused by NIOHTTP2 (a header it rejects, a stream it closed) fails this promise:
            // the push fails at once instead of waiting for its deadline.
            let written = context.eventLoop.makePromise(of: Void.self)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(next.request.body), endStream: true)))),
                promise: written
            )
            written.futureResult.assumeIsolated().whenFailure { [self] error in
                finish(id, .failure(.failed("\(error)")))
            }
            needsFlush = true
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let id = Int32(frame.streamID)
        switch frame.payload {
        case .headers(let headers):
            if streams[id] != nil {
                if let status = headers.headers.first(name: ":status").flatMap({ Int($0) }) {
                    // A new status block (a final answer after a 1xx) brings its own headers.
                    streams[id]?.status = status
                    streams[id]?.retryAfter = headers.headers.first(name: "retry-after")
                }
                if headers.endStream { answer(id) }
            }
        case .data(let data):
            window.received(data)
            if streams[id] != nil {
                if case .byteBuffer(var buffer) = data.data, buffer.readableBytes > 0 {
                    if streams[id]?.body == nil { streams[id]?.body = ByteBuffer() }
                    streams[id]?.body?.writeBuffer(&buffer)
                }
                if data.endStream { answer(id) }
            }
        case .rstStream:
            finish(id, .failure(.closed))
        case .goAway(let lastStreamID, _, _):
            let last = Int32(lastStreamID)
            for (streamID, _) in streams where streamID > last { finish(streamID, .failure(.closed)) }
            retire(context: context)
        case .settings(.settings(let settings)):
            // No stream starts before the server's first SETTINGS: APNs announces a small limit on a
            // new connection and raises it once a provider token has been accepted. Without the
            // setting, the server sets no limit of its own.
            if let announced = settings.last(where: { $0.parameter == .maxConcurrentStreams }) {
                limit = max(1, min(clientLimit, announced.value))
            } else if !settingsReceived {
                limit = clientLimit
            }
            settingsReceived = true
            startWaiting()
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if window.writeUpdate(to: context) { needsFlush = true }
        flushIfNeeded()
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A stream NIOHTTP2 closed without an answer (reset, or dropped by GOAWAY).
        if let closed = event as? StreamClosedEvent { finish(Int32(closed.streamID), .failure(.closed)) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        retiring.set()
        failEverything(.closed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            // One stream broke (NIOHTTP2 reset it); the connection goes on.
            finish(Int32(streamError.streamID), .failure(.failed("stream: \(streamError.baseError)")))
            return
        }
        retiring.set()
        failEverything(.failed("connection: \(error)"))
        context.close(promise: nil)
    }

    private func answer(_ id: Int32) {
        guard let stream = streams[id] else { return }
        guard let status = stream.status else {
            finish(id, .failure(.failed("an answer without a :status")))
            return
        }
        let elapsed = NIODeadline.now() - stream.started
        finish(
            id,
            .success(
                HTTP2Answer(
                    status: status,
                    retryAfter: stream.retryAfter,
                    body: stream.body ?? ByteBuffer(),
                    elapsed: .nanoseconds(elapsed.nanoseconds)
                )
            )
        )
    }

    private func finish(_ id: Int32, _ outcome: Result<HTTP2Answer, HTTP2ConnectionError>) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        stream.batch.complete(stream.index, outcome)
        if let context, retiring.isSet {
            if streams.isEmpty { context.close(promise: nil) }
        } else {
            startWaiting()
        }
    }

    private func expire(_ batch: HTTP2Batch) {
        // The waiting ones first: finishing a stream below starts waiting ones.
        let late = waiting.filter { $0.batch === batch }
        waiting.removeAll { $0.batch === batch }
        for next in late { batch.complete(next.index, .failure(.timeout)) }
        for (id, stream) in streams where stream.batch === batch {
            finish(id, .failure(.timeout))
            // Frees the server's stream slot; the stream id is never reused.
            context?.write(wrapOutboundOut(HTTP2Frame(streamID: HTTP2StreamID(id), payload: .rstStream(.cancel))), promise: nil)
            needsFlush = true
        }
        flushIfNeeded()
    }

    /// No new streams here: the waiting ones fail as `closed` (to be retried elsewhere); the
    /// connection closes once its open streams are answered.
    private func retire(context: ChannelHandlerContext) {
        retiring.set()
        while let next = waiting.popFirst() { next.batch.complete(next.index, .failure(.notSent("the connection retired"))) }
        if streams.isEmpty { context.close(promise: nil) }
    }

    private func failEverything(_ error: HTTP2ConnectionError) {
        while let next = waiting.popFirst() { next.batch.complete(next.index, .failure(.notSent("\(error)"))) }
        let open = streams
        streams.removeAll()
        for (_, stream) in open { stream.batch.complete(stream.index, .failure(error)) }
    }

    private func flushIfNeeded() {
        guard needsFlush, let context else { return }
        needsFlush = false
        context.flush()
    }
}
