import HeraldStore
import Hummingbird
import Postgres

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
    let limits: RequestLimits
    /// Authenticated routes run their handler with this executor preference: they are database-bound,
    /// and on the client's threads each statement runs in place instead of hopping threads twice.
    let databaseExecutor: (any TaskExecutor)?
    /// The standby that routes registered with `reads: .standby` read on (see `ReadReplica`).
    let replica: ReadReplica?
    private(set) var routes: [RouteDescription] = []

    init(
        router: Router<HeraldRequestContext>,
        authenticator: Authenticator,
        limits: RequestLimits = RequestLimits(.off),
        databaseExecutor: (any TaskExecutor)? = nil,
        replica: ReadReplica? = nil
    ) {
        self.router = router
        self.authenticator = authenticator
        self.limits = limits
        self.databaseExecutor = databaseExecutor
        self.replica = replica
    }

    /// Where a user route's reads go: the session check, the route's main lookup and the reads its
    /// handler makes through `HeraldRequestContext.standby`. Writes always go to the primary.
    enum Reads {
        case primary
        /// The read standby, when one is configured and fit (see `reading(_:_:)`).
        case standby
    }

    /// Registers `handler` for `method` and `path` behind `access`.
    func add(
        _ method: HTTPRequest.Method,
        _ path: String,
        access: Authenticator.Access,
        reads: Reads = .primary,
        use handler: @escaping @Sendable (Request, HeraldRequestContext) async throws -> some ResponseGenerator
    ) {
        let (authenticator, limits) = (self.authenticator, self.limits)
        let executor = access == .anyone ? nil : databaseExecutor
        let replica = access == .user && reads == .standby ? self.replica : nil
        router.on(RouterPath(path), method: method) { request, context in
            try await withTaskExecutorPreference(executor) {
                try await Self.reading(replica) { standby in
                    var context = context
                    context.standby = standby
                    context.user = try await Self.limited(request, context, access: access, limits: limits) {
                        guard access == .user else { return try await authenticator.authorize(request, for: access) }
                        return try await authenticator.requireUser(request, alongside: SessionCompanion<Never>?.none, reading: &context.standby).0
                    }
                    let response = try await handler(request, context).response(from: request, context: context)
                    context.standby?.answered()
                    return response
                }
            }
        }
        routes.append(RouteDescription(method: method.rawValue.lowercased(), path: path))
    }

    /// Registers a user route that reads its request once, with `parse`, before the session check, and
    /// sends the input's companion lookup with that check in one round trip. The handler receives the
    /// input and the lookup's answer (`nil` when there was none, or it could not be used). What `parse`
    /// throws reaches the caller only after a successful session check, so that an unauthenticated
    /// caller always learns that first.
    func add<Input: RouteInput>(
        _ method: HTTPRequest.Method,
        _ path: String,
        reads: Reads = .primary,
        parse: @escaping @Sendable (Request, HeraldRequestContext) async throws -> Input,
        use handler: @escaping @Sendable (Request, HeraldRequestContext, Input, Input.Answer?) async throws -> some ResponseGenerator
    ) {
        let (authenticator, limits) = (self.authenticator, self.limits)
        let replica = reads == .standby ? self.replica : nil
        router.on(RouterPath(path), method: method) { [databaseExecutor] request, context in
            // Parsing and the session check run where the connection's task runs: on its event loop
            // when that loop has a database connection of its own (`HeraldServerChannel`), and the
            // handler joins them there when the answer is all it needs.
            let parsed: Result<Input, any Error>
            do { parsed = .success(try await parse(request, context)) } catch { parsed = .failure(error) }
            return try await Self.reading(replica) { standby in
                var context = context
                context.standby = standby
                var answer: Input.Answer?
                (context.user, answer) = try await Self.limited(request, context, access: .user, limits: limits) {
                    let companion = try? parsed.get().companion
                    return try await authenticator.requireUser(request, alongside: companion, reading: &context.standby)
                }
                let input = try parsed.get()
                let response = try await withTaskExecutorPreference(input.isAnswered(by: answer) ? nil : databaseExecutor) { [context] in
                    try await handler(request, context, input, answer).response(from: request, context: context)
                }
                context.standby?.answered()
                return response
            }
        }
        routes.append(RouteDescription(method: method.rawValue.lowercased(), path: path))
    }

    /// Runs a request with its reads on the standby when `replica` may take them now, else on the
    /// primary. A request the standby cannot finish runs again, whole, on the primary: one that met a
    /// database error there (unreachable, a statement cancelled by replay, a schema not replayed yet),
    /// one whose token reaches beyond it and beyond what the primary had issued (`ReadReplica.Behind`),
    /// and one answered "not found" — a channel or device made on the primary that the standby has not
    /// replayed yet. Running again is safe: these routes' writes (a device's sync mark, a channel
    /// opened) are idempotent.
    static func reading<Result>(_ replica: ReadReplica?, _ body: (ReadReplica?) async throws -> Result) async throws -> Result {
        guard let standby = replica?.takeReads() else { return try await body(nil) }
        do {
            return try await body(standby)
        } catch let error as PostgresError where error.code != .clientClosed {
            standby.failed(error)
        } catch is ReadReplica.Behind {
            // Counted where it was found.
        } catch let error as APIError where error.status == .notFound {
            standby.fellBack(.failed)
        }
        return try await body(nil)
    }

    /// Runs `authenticate` within the rate limits of `access`: refused (429) before it when a limit is
    /// spent, and a credential it refuses (401) counted against the client's address.
    static func limited<Result>(
        _ request: Request,
        _ context: HeraldRequestContext,
        access: Authenticator.Access,
        limits: RequestLimits,
        _ authenticate: () async throws -> Result
    ) async throws -> Result {
        guard access != .anyone, !limits.isOff else { return try await authenticate() }
        let address = context.remoteAddress?.ipAddress
        switch access {
        case .user: try await limits.admitUser(address: address, bearer: Authenticator.bearerToken(request))
        case .admin: try await limits.admitAdmin(address: address)
        case .anyone: break
        }
        do {
            return try await authenticate()
        } catch let error as APIError where error.status == .unauthorized {
            limits.authenticationFailed(address: address)
            throw error
        }
    }
}
