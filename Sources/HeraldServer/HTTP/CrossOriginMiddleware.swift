import Hummingbird
import Synchronization

/// CORS for the routes pages may call — the user's routes, the stream, the VAPID key, the client
/// files — for the origins `CrossOriginPolicy` lists; admin routes and the console are never
/// cross-origin.
///
/// On those routes a preflight from a listed origin is answered with the methods of its path, the
/// headers the routes read and how long a browser may keep the answer; a request from a listed origin
/// gets `Access-Control-Allow-Origin` (on errors too, so that the page reads the JSON error) with
/// `Retry-After` exposed. A page's request whose `Origin` is neither listed nor Herald's own is refused
/// (403) before anything runs (`CrossOriginPolicy.admits`): a browser would hide the answer from the
/// page, but a simple request would still have done its work.
///
/// Hummingbird's `CORSMiddleware` answers every preflight with one list of methods, exposes headers on
/// preflights only, and takes its origins as a variadic list: not what these routes need.
///
/// Added before the error middleware, so that it sees every answer as it goes out, errors made
/// answers. The routes are known only once they have registered, after it (`CrossOriginRoutes`).
struct CrossOriginMiddleware: RouterMiddleware {
    typealias Context = HeraldRequestContext

    let policy: CrossOriginPolicy
    let routes: CrossOriginRoutes

    /// The request headers Herald's routes read.
    static let allowedHeaders = "Authorization, Content-Type, Idempotency-Key, Herald-Device"
    /// The answer headers a page may read beyond the CORS-safelisted ones.
    static let exposedHeaders = "Retry-After, Idempotent-Replayed"
    /// Chromium keeps a preflight's answer at most two hours.
    static let maximumAge = "7200"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let methods = routes.methods(allowedFor: request.uri.path)
        let preflight = request.method == .options && request.headers[.accessControlRequestMethod] != nil
        // Not a route pages may call (an admin route on the same path as one they may, too).
        guard preflight ? !methods.isEmpty : methods.contains(request.method.rawValue) else { return try await next(request, context) }
        guard let origin = request.headers[.origin] else { return Self.varying(try await next(request, context)) }
        let listed = policy.lists(origin)
        if preflight {
            guard listed else { return try Self.refusal(origin, request, context) }
            var response = Response(status: .noContent)
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.accessControlAllowMethods] = methods.joined(separator: ", ")
            response.headers[.accessControlAllowHeaders] = Self.allowedHeaders
            response.headers[.accessControlMaxAge] = Self.maximumAge
            return Self.varying(response)
        }
        guard policy.admits(origin: origin, host: request.head.authority) else { return try Self.refusal(origin, request, context) }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as APIError {
            // The error middleware (after this one) makes every error an `APIError`, answered by the
            // server once it gets here: answered here instead, so that the page can read it.
            response = try error.response(from: request, context: context)
        }
        if listed {
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.accessControlExposeHeaders] = Self.exposedHeaders
        }
        return Self.varying(response)
    }

    /// The answer differs by `Origin`: caches must keep one per origin.
    private static func varying(_ response: Response) -> Response {
        var response = response
        response.headers[values: .vary].append("Origin")
        return response
    }

    private static func refusal(_ origin: String, _ request: Request, _ context: Context) throws -> Response {
        try APIError(
            .forbidden,
            code: "origin_not_allowed",
            message: "Pages on \(origin) may not call Herald: list the origin in HERALD_CORS_ORIGINS."
        ).response(from: request, context: context)
    }
}

/// The routes pages on other origins may call, and their methods: added as routes register, read by
/// `CrossOriginMiddleware`, which is added before them.
final class CrossOriginRoutes: Sendable {
    private let paths = Mutex(RoutePaths())

    func add(_ route: RouteDescription) {
        paths.withLock { $0.add(route) }
    }

    func methods(allowedFor path: String) -> [String] {
        paths.withLock { $0.methods(allowedFor: path) }
    }
}
