import HeraldServices
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
/// which Hummingbird and OpenAPI share. Where handlers run is not decided here: every request runs
/// where its connection's task does (`HeraldServerChannel.executor`).
final class RouteRegistry {
    let router: Router<HeraldRequestContext>
    let authenticator: Authenticator
    let limits: RequestLimits
    /// The standby that routes registered with `reads: .standby` read on (see `RequestReads`).
    let replica: ReadReplica?
    /// The routes pages on other origins may call (`CrossOriginMiddleware`).
    let crossOrigin: CrossOriginRoutes
    private(set) var routes: [RouteDescription] = []

    init(
        router: Router<HeraldRequestContext>,
        authenticator: Authenticator,
        limits: RequestLimits = RequestLimits(.off),
        replica: ReadReplica? = nil,
        crossOrigin: CrossOriginRoutes = CrossOriginRoutes()
    ) {
        self.router = router
        self.authenticator = authenticator
        self.limits = limits
        self.replica = replica
        self.crossOrigin = crossOrigin
    }

    /// Where a user route's reads go: the session check, the route's main lookup and the reads its
    /// handler makes through `HeraldRequestContext.reads`. Writes always go to the primary.
    enum Reads {
        case primary
        /// The read standby, when one is configured and fit (see `RequestReads`).
        case standby
    }

    /// Registers `handler` for `method` and `path` behind `access`. User routes may be called by pages
    /// on the listed origins; other routes only when `crossOrigin` says so.
    func add(
        _ method: HTTPRequest.Method,
        _ path: String,
        access: Authenticator.Access,
        reads: Reads = .primary,
        crossOrigin: Bool = false,
        use handler: @escaping @Sendable (Request, HeraldRequestContext) async throws -> some ResponseGenerator
    ) {
        let (authenticator, limits) = (self.authenticator, self.limits)
        let replica = access == .user && reads == .standby ? self.replica : nil
        router.on(RouterPath(path), method: method) { request, context in
            var context = context
            context.reads = Self.reads(replica)
            context.user = try await Self.limited(request, context, access: access, limits: limits) { [context] in
                guard access == .user else { return try await authenticator.authorize(request, for: access) }
                return try await authenticator.requireUser(request, alongside: SessionCompanion<Never>?.none, reads: context.reads).0
            }
            let response = try await handler(request, context).response(from: request, context: context)
            context.reads.finish()
            await Self.caughtUp(after: method, authenticator.notifier)
            return response
        }
        record(RouteDescription(method: method.rawValue.lowercased(), path: path), crossOrigin: crossOrigin || access == .user)
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
        router.on(RouterPath(path), method: method) { request, context in
            let parsed: Result<Input, any Error>
            do { parsed = .success(try await parse(request, context)) } catch { parsed = .failure(error) }
            var context = context
            context.reads = Self.reads(replica)
            var answer: Input.Answer?
            (context.user, answer) = try await Self.limited(request, context, access: .user, limits: limits) { [context] in
                // Built only if the database is asked (see `requireUser`).
                try await authenticator.requireUser(request, alongside: try? parsed.get().companion, reads: context.reads)
            }
            let input = try parsed.get()
            let response = try await handler(request, context, input, answer).response(from: request, context: context)
            context.reads.finish()
            await Self.caughtUp(after: method, authenticator.notifier)
            return response
        }
        record(RouteDescription(method: method.rawValue.lowercased(), path: path), crossOrigin: true)
    }

    private func record(_ route: RouteDescription, crossOrigin: Bool) {
        routes.append(route)
        if crossOrigin { self.crossOrigin.add(route) }
    }

    /// A write answers once memory has heard of it (`ChangeNotifier.catchUp`): a client that writes
    /// and then polls this process sees its write.
    static func caughtUp(after method: HTTPRequest.Method, _ notifier: ChangeNotifier?) async {
        guard let notifier, method != .get, method != .head else { return }
        await notifier.catchUp()
    }

    /// Where a request on a route with these reads starts reading: the standby when one is configured
    /// and may take reads now, else the primary.
    static func reads(_ replica: ReadReplica?) -> RequestReads {
        guard let standby = replica?.takeReads() else { return .primary }
        return RequestReads(standby)
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
