import HTTPTypes
import NIOCore
import NIOHTTP1

/// Answers a connection whose first request cannot be parsed — a head larger than the decoder's limit,
/// malformed syntax — with a JSON 400 (431 for a head too large) and closes it.
///
/// Until the first request's head is understood, the WebSocket upgrade handler owns the connection and
/// lets decoding errors pass; nothing else would answer or close, so the client would wait, and the
/// connection's task with it, for as long as the client keeps the socket open. Once the upgrade is
/// decided `HeraldServerChannel` removes this handler: from then on Hummingbird answers parse errors
/// itself (a 400, then close), its answer given a body by `ParseErrorBodyWriter`.
final class ParseErrorResponder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var answered = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parseError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        guard !answered else { return }
        answered = true
        let apiError = Self.apiError(for: parseError)
        let body = apiError.body
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        headers.add(name: "Connection", value: "close")
        let head = HTTPResponseHead(version: .http1_1, status: .init(statusCode: apiError.status.code), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    /// The answer to a request the decoder could not parse.
    static func apiError(for parseError: HTTPParserError) -> APIError {
        if case .headerOverflow = parseError {
            return APIError(
                .init(code: 431, reasonPhrase: "Request Header Fields Too Large"),
                code: "headers_too_large",
                message: "The request's line and headers are larger than the server accepts."
            )
        }
        return APIError(.badRequest, code: "bad_request", message: "The request is not valid HTTP/1.1.")
    }
}
