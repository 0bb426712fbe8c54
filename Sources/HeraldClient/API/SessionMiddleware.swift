import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Puts the session token on every request; on a `401` asks for a new token once and sends the request
/// again with it (the bodies the library sends are small and buffered, so they can be sent twice).
struct SessionMiddleware: ClientMiddleware {
    let credentials: SessionCredentials

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        let token = await credentials.token
        request.headerFields[.authorization] = "Bearer \(token)"
        let (response, responseBody) = try await next(request, body, baseURL)
        guard response.status == .unauthorized else { return (response, responseBody) }
        guard let fresh = await credentials.renewed(after: token) else { throw HeraldClientError.unauthorized }
        request.headerFields[.authorization] = "Bearer \(fresh)"
        let (retried, retriedBody) = try await next(request, body, baseURL)
        if retried.status == .unauthorized { throw HeraldClientError.unauthorized }
        return (retried, retriedBody)
    }
}
