import HTTPTypes
import NIOCore
import NIOHTTP1

/// Makes sure that every request head the decoder reads gets an answer, where NIO on its own would
/// leave the client waiting or close without one. It sits right after the HTTP/1.1 decoder, before
/// the WebSocket upgrade handler, for the life of the connection.
///
/// - **Upgrades we do not serve.** NIO's upgrade handler takes any request with an `Upgrade` header
///   as an upgrade attempt, and when no upgrader accepts it (`Upgrade: h2c`, `Upgrade: foo/1`, or a
///   WebSocket handshake NIO's upgrader refuses, such as one without `Sec-WebSocket-Key`) the request's
///   head is lost and the connection hangs. RFC 9110 §7.8 lets a server ignore `Upgrade`: the header
///   is removed, so the request is answered as a plain one, and the connection closes after the answer
///   (the decoder stops parsing after an upgrade request, so nothing after it could be read). A broken
///   WebSocket handshake is marked (`brokenWebSocketHeader`) so that the stream's route answers 400.
/// - **`CONNECT`.** The decoder treats the connection as a tunnel after it, and the encoder writes no
///   body in answer to it, whatever the status. It is answered here with the usual JSON error (405),
///   written past the encoder, once any answer still in progress is out, and the connection closes.
/// - **Bodies refused unread.** After a `413` that answered a body before it arrived (a too-large
///   `Content-Length`, perhaps with `Expect: 100-continue`), the connection's output is closed, so the
///   client knows at once that nothing more will be read and answered.
final class RequestHeadFilter: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Set on a request whose WebSocket handshake was malformed (and whose `Upgrade` was removed).
    static let brokenWebSocketHeader = "Herald-Broken-WebSocket-Handshake"

    /// Requests passed on whose answer has not been written to its end.
    private var unanswered = 0
    /// A `CONNECT` came in: everything after it is dropped, and it is answered once `unanswered` is 0.
    private var connectPending = false
    /// The answer being written is a 413: close the output after its end.
    private var closeAfterAnswer = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !connectPending else { return }
        guard case .head(var head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        if head.method == .CONNECT {
            connectPending = true
            if unanswered == 0 { answerConnect(context: context) }
            return
        }
        let protocols = head.headers[canonicalForm: "upgrade"].map { $0.lowercased() }
        if !protocols.isEmpty, !(protocols.contains("websocket") && Self.isWellFormedWebSocketHandshake(head.headers)) {
            if protocols.contains("websocket") { head.headers.replaceOrAdd(name: Self.brokenWebSocketHeader, value: "true") }
            head.headers.remove(name: "upgrade")
            head.headers.replaceOrAdd(name: "connection", value: "close")
        }
        unanswered += 1
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where head.status == .payloadTooLarge:
            closeAfterAnswer = true
            head.headers.replaceOrAdd(name: "connection", value: "close")
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end:
            unanswered = max(0, unanswered - 1)
            let closing = closeAfterAnswer
            closeAfterAnswer = false
            let written = promise ?? context.eventLoop.makePromise()
            context.write(data, promise: written)
            if closing {
                written.futureResult.assumeIsolated().whenSuccess { context.close(mode: .output, promise: nil) }
            } else if connectPending, unanswered == 0 {
                written.futureResult.assumeIsolated().whenSuccess { self.answerConnect(context: context) }
            }
        default:
            context.write(data, promise: promise)
        }
    }

    /// What NIO's WebSocket upgrader requires before it accepts a handshake: one `Sec-WebSocket-Key`
    /// and one `Sec-WebSocket-Version`, which must be 13.
    static func isWellFormedWebSocketHandshake(_ headers: HTTPHeaders) -> Bool {
        let keys = headers[canonicalForm: "sec-websocket-key"]
        let versions = headers[canonicalForm: "sec-websocket-version"]
        return keys.count == 1 && !keys[0].isEmpty && versions.count == 1 && versions[0] == "13"
    }

    /// Writes the 405 as bytes from the encoder's own position in the pipeline (so past it) and closes.
    private func answerConnect(context: ChannelHandlerContext) {
        let error = APIError(.methodNotAllowed, code: "method_not_allowed", message: "CONNECT is not served here.")
        let body = error.body
        var bytes = context.channel.allocator.buffer(capacity: 160 + body.readableBytes)
        bytes.writeString(
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json; charset=utf-8\r\n"
                + "Content-Length: \(body.readableBytes)\r\nAllow: \r\nConnection: close\r\n\r\n"
        )
        bytes.writeImmutableBuffer(body)
        let channel = context.channel
        guard let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self) else {
            channel.close(promise: nil)
            return
        }
        encoder.writeAndFlush(NIOAny(IOData.byteBuffer(bytes))).whenComplete { _ in channel.close(promise: nil) }
    }
}
