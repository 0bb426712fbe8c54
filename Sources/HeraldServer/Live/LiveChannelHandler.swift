import NIOCore
import NIOWebSocket

/// The last handler of an upgraded live-stream channel: answers the client's control frames and keeps
/// the connection honest. Events are written by `LiveConnection.send`; frames are encoded and decoded
/// by NIOWebSocket's codec, which the upgrade put in front of this handler.
///
/// Keep-alive: an `IdleStateHandler` before this one reports when nothing has arrived for the ping
/// interval; the first time a ping goes out, the second time (no pong, nothing at all for two
/// intervals) the peer is taken for dead and the connection closed.
final class LiveChannelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let connection: LiveConnection
    private let onClose: @Sendable (LiveConnection) -> Void
    private var awaitingPong = false

    init(connection: LiveConnection, onClose: @escaping @Sendable (LiveConnection) -> Void) {
        self.connection = connection
        self.onClose = onClose
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        awaitingPong = false
        switch frame.opcode {
        case .connectionClose:
            if connection.peerClosed() {
                context.close(promise: nil)
            } else {
                // Echo the peer's code (RFC 6455 §5.5.1), then end the connection.
                var data = frame.unmaskedData
                let echo = data.readSlice(length: min(2, data.readableBytes)) ?? ByteBuffer()
                let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: echo))).whenComplete { _ in
                    bound.value.close(promise: nil)
                }
            }
        case .ping:
            guard frame.fin else {
                context.close(promise: nil)
                return
            }
            connection.pong(frame.unmaskedData)
        default:
            // Pongs only prove the peer is there; the stream has nothing for clients to send.
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case IdleStateHandler.IdleStateEvent.read = event else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        if awaitingPong {
            context.close(promise: nil)
        } else {
            awaitingPong = true
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer())), promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        onClose(connection)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
