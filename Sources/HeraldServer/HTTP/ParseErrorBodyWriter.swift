import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Gives Hummingbird's answer to a request that cannot be parsed, after the connection's first, the
/// JSON error body every other error has (and 431 for a head too large).
///
/// Hummingbird answers such a request, once it has finished the ones before it, with a bodiless 400
/// and closes. This handler sits between the HTTP codec and Hummingbird's channel: it notes the parse
/// error on its way in, and rewrites the one response that answers it on its way out, recognised as
/// Hummingbird writes it (a 400 with `Content-Length: 0` and `Connection: close`, which no route
/// of ours sends).
final class ParseErrorBodyWriter: ChannelDuplexHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var parseError: HTTPParserError?
    /// The body still to write before the rewritten response's end.
    private var pendingBody: ByteBuffer?

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if parseError == nil, let error = error as? HTTPParserError { parseError = error }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where isHummingbirdsParseErrorAnswer(head):
            let error = ParseErrorResponder.apiError(for: parseError!)
            parseError = nil
            let body = error.body
            pendingBody = body
            context.write(wrapOutboundOut(.head(error.closingHead(bodyLength: body.readableBytes))), promise: promise)
        case .end(let trailers) where pendingBody != nil:
            context.write(wrapOutboundOut(.body(pendingBody!)), promise: nil)
            pendingBody = nil
            context.write(wrapOutboundOut(.end(trailers)), promise: promise)
        default:
            context.write(data, promise: promise)
        }
    }

    private func isHummingbirdsParseErrorAnswer(_ head: HTTPResponse) -> Bool {
        parseError != nil && head.status == .badRequest && head.headerFields[.contentLength] == "0"
            && head.headerFields[.connection] == "close"
    }
}
