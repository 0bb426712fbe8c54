import HTTPTypes
import Hummingbird

/// A route's answer that a long poll (`?wait=`) may hold back: written at once, or — when the answer
/// is quiet and the poll may wait — by the response body, once `later` has waited for a change and
/// read again (or the time ran out).
///
/// Why in the body: by the time a response's body is written, the route, its middleware and the
/// router have returned, so a waiting poll holds only the connection's task and this wait, not every
/// frame of the handlers that decided to wait. The status line goes out when the wait starts: a read
/// after the wait that fails answers the quiet answer it had, and the client polls again.
enum LongPollAnswer<Body: JSONWritable & Sendable>: ResponseGenerator {
    case now(Body)
    case later(@Sendable () async -> Body)

    func response(from request: Request, context: some RequestContext) throws -> Response {
        switch self {
        case .now(let body):
            return try body.response(from: request, context: context)
        case .later(let answer):
            var headers = HTTPFields()
            headers[.contentType] = "application/json; charset=utf-8"
            return Response(
                status: .ok,
                headers: headers,
                body: ResponseBody { writer in
                    var json = JSONWriter()
                    await answer().write(to: &json)
                    try await writer.write(json.buffer)
                    try await writer.finish(nil)
                }
            )
        }
    }
}
