import Hummingbird

/// Answers a request whose path is one of Herald's routes, but not for its method, with 405 and the
/// `Allow` header (RFC 9110 §15.5.6) instead of the router's 404: the path is right, the method is not.
///
/// Added after every route, so that it wraps only the router's not-found responder: Hummingbird wraps
/// each route in the middleware added before it, and the not-found responder in all of them.
struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = HeraldRequestContext

    private let routes: RoutePaths

    init(routes: [RouteDescription]) {
        self.routes = RoutePaths(routes)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let allowed = methods(allowedFor: request.uri.path)
        guard !allowed.isEmpty else { return try await next(request, context) }
        let list = allowed.joined(separator: ", ")
        let error = APIError(.methodNotAllowed, code: "method_not_allowed", message: "This path takes \(list), not \(request.method.rawValue).")
        var response = try error.response(from: request, context: context)
        response.headers[.allow] = list
        return response
    }

    /// The methods of the routes whose path template matches `path`, sorted; empty when none does.
    func methods(allowedFor path: String) -> [String] {
        routes.methods(allowedFor: path)
    }
}
