import Hummingbird

/// An error answered to the client as `{"error":{"code":"…","message":"…"}}` with its HTTP status.
///
/// `code` is a stable, machine-readable snake_case identifier; `message` is for people. Neither ever
/// carries internal detail (SQL, server messages, secrets).
public struct APIError: Error, HTTPResponseError, Sendable, Equatable {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    /// Seconds the client should wait before trying again, sent as `Retry-After` (a 429's).
    public var retryAfter: Int?

    public init(_ status: HTTPResponse.Status, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }

    /// The head of this error's answer on a connection that closes after it, for handlers that write
    /// to the channel themselves (outside the router).
    func closingHead(bodyLength: Int) -> HTTPResponse {
        var fields: HTTPFields = [
            .contentType: "application/json; charset=utf-8", .contentLength: String(bodyLength), .connection: "close",
        ]
        if let retryAfter { fields[.retryAfter] = String(retryAfter) }
        return HTTPResponse(status: status, headerFields: fields)
    }

    /// The JSON body, keys always in the documented order (`JSONEncoder` follows a dictionary's order,
    /// which differs from one error to the next).
    var body: ByteBuffer {
        var writer = JSONWriter(capacity: 64 + message.utf8.count)
        writer.beginObject()
        writer.key("error")
        writer.beginObject()
        writer.key("code")
        writer.string(code)
        writer.key("message")
        writer.string(message)
        writer.endObject()
        writer.endObject()
        return writer.buffer
    }
}

extension APIError {
    /// A route that keeps secrets sealed, on a server without the key that seals them: `what` says
    /// what cannot be kept ("credentials cannot be stored").
    static func secretsUnavailable(_ what: String) -> APIError {
        APIError(.serviceUnavailable, code: "secrets_unavailable", message: "No secret key is configured (HERALD_SECRET_KEY), so \(what).")
    }
}

extension APIError {
    public static let internalError = APIError(.internalServerError, code: "internal_error", message: "An internal error occurred.")

    public static let databaseUnavailable = APIError(
        .serviceUnavailable,
        code: "database_unavailable",
        message: "The database is unavailable; retry later."
    )
}
