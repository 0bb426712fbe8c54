import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Puts the session token on every request; on a `401` asks for a new token once and sends the request
/// again with it (the bodies the library sends are small and buffered, so they can be sent twice). A
/// `429` becomes `HeraldClientError.rateLimited` with its `Retry-After`. Every request and answer is
/// logged at `debug` (method, path and status; never the token).
struct SessionMiddleware: ClientMiddleware {
    let credentials: SessionCredentials
    let log: ClientLog

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        let token = try await credentials.current()
        request.headerFields[.authorization] = "Bearer \(token)"
        let path = request.path?.split(separator: "?").first.map(String.init) ?? ""
        log(.debug, "request \(operationID) \(request.method) \(path)")
        var (response, responseBody) = try await next(request, body, baseURL)
        if response.status == .unauthorized {
            guard let fresh = await credentials.renewed(after: token) else { throw HeraldClientError.unauthorized }
            request.headerFields[.authorization] = "Bearer \(fresh)"
            (response, responseBody) = try await next(request, body, baseURL)
            if response.status == .unauthorized { throw HeraldClientError.unauthorized }
        }
        log(.debug, "answer \(operationID) \(response.status.code)")
        if response.status == .tooManyRequests {
            let seconds = response.headerFields[.retryAfter].flatMap { Int($0) } ?? 1
            throw HeraldClientError.rateLimited(retryAfter: .seconds(max(seconds, 1)))
        }
        return (response, responseBody)
    }
}
