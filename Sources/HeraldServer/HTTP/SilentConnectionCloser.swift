import NIOCore

/// Closes an HTTP connection on which nothing was read or written for a while (`IdleStateHandler`'s
/// all-idle event, placed before it): a second line behind Hummingbird's `HTTPConnectionStateHandler`,
/// which closes a kept-alive connection after the idle timeout but was seen, under the test suite's
/// full load, to leave an answered one open for minutes while its event loop ran. Set to twice that
/// timeout, it never acts first on a connection the state handler closes, and a request being worked
/// on is never silent that long (statements time out first; long answers stream).
final class SilentConnectionCloser: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .all {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
