import NIOCore
import NIOTLS

/// Completes `negotiated` when the TLS handshake is done and the server agreed to HTTP/2 (ALPN `h2`,
/// as RFC 9113 §3.2 requires over TLS); fails it when the server chose another protocol or none, or
/// the connection ended first.
///
/// A connection is handed out only after this: a server that speaks only HTTP/1.1 is told apart from
/// one that failed, so a client can send to it another way.
final class ProtocolNegotiationHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let negotiated: EventLoopPromise<Void>
    private var done = false

    init(negotiated: EventLoopPromise<Void>) {
        self.negotiated = negotiated
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let chosen) = event as? TLSUserEvent {
            if chosen == "h2" {
                finish(.success(()))
            } else {
                finish(.failure(HTTP2ConnectionError.notHTTP2(chosen)))
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(HTTP2ConnectionError.failed("the connection closed during the TLS handshake")))
        context.fireChannelInactive()
    }

    /// The handshake's time ran out.
    func timedOut() {
        finish(.failure(HTTP2ConnectionError.failed("timeout: the TLS handshake did not finish in time")))
    }

    private func finish(_ result: Result<Void, any Error>) {
        guard !done else { return }
        done = true
        negotiated.completeWith(result)
    }
}
