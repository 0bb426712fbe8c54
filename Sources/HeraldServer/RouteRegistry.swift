import Hummingbird

/// A route as documented in `openapi.yaml`: method (lower case) and path template.
public struct RouteDescription: Sendable, Hashable, CustomStringConvertible {
    public var method: String
    public var path: String

    public init(method: String, path: String) {
        self.method = method
        self.path = path
    }

    public var description: String { "\(method.uppercased()) \(path)" }
}

/// Registers handlers on the router, each behind its access check, and remembers every route so that
/// a test can hold the router and `openapi.yaml` to each other. Paths use the `{name}` capture syntax,
/// which Hummingbird and OpenAPI share.
final class RouteRegistry {
    let router: Router<HeraldRequestContext>
    let authenticator: Authenticator
    /// Authenticated routes run their handler with this executor preference: they are database-bound,
    /// and on the client's threads each statement runs in place instead of hopping threads twice.
    let databaseExecutor: (any TaskExecutor)?
    private(set) var routes: [RouteDescription] = []

    init(router: Router<HeraldRequestContext>, authenticator: Authenticator, databaseExecutor: (any TaskExecutor)? = nil) {
        self.router = router
        self.authenticator = authenticator
        self.databaseExecutor = databaseExecutor
    }

    /// Registers `handler` for `method` and `path` behind `access`. A `.user` route may name a
    /// `companion`: its statement then goes to the database with the session check, in one round trip,
    /// and the handler finds the rows in `context.companionAnswer` when they were read for the session's
    /// own user (or, for a companion built for no user, for any live session).
    func add(
        _ method: HTTPRequest.Method,
        _ path: String,
        access: Authenticator.Access,
        companion: SessionCompanion.Builder? = nil,
        use handler: @escaping @Sendable (Request, HeraldRequestContext) async throws -> some ResponseGenerator
    ) {
        let authenticator = self.authenticator
        let executor = access == .anyone ? nil : databaseExecutor
        let companion = access == .user ? companion : nil
        router.on(RouterPath(path), method: method) { request, context in
            try await withTaskExecutorPreference(executor) {
                var context = context
                if let companion, let wanted = await companion(request, context) {
                    let (user, rows) = try await authenticator.requireUser(request, alongside: wanted)
                    context.user = user
                    context.companionAnswer = rows.map { SessionCompanion.Answer(question: wanted.question, rows: $0) }
                } else {
                    context.user = try await authenticator.authorize(request, for: access)
                }
                return try await handler(request, context).response(from: request, context: context)
            }
        }
        routes.append(RouteDescription(method: method.rawValue.lowercased(), path: path))
    }
}
