import Foundation
import HeraldCore
import HeraldServices
import HeraldStore
import Hummingbird

/// Decides who a request comes from, by its `Authorization: Bearer …` header.
struct Authenticator: Sendable {
    /// The admin token; `nil` refuses every admin request.
    let adminToken: String?
    let sessions: SessionStore
    /// Vouches for sessions it has seen live, until it hears of a revocation; `nil` asks the database
    /// every time.
    var notifier: ChangeNotifier?

    /// Who may call a route.
    enum Access: Sendable {
        case anyone
        case admin
        /// A valid session token; the route acts for its user only.
        case user
    }

    /// Checks the request's credentials for `access`; returns the user for `.user` routes.
    func authorize(_ request: Request, for access: Access) async throws -> AuthenticatedUser? {
        switch access {
        case .anyone: return nil
        case .admin:
            try await requireAdmin(request)
            return nil
        case .user:
            return try await requireUser(request)
        }
    }

    /// User routes: a live session token; anything else, the admin token included, is a 401.
    func requireUser(_ request: Request) async throws -> AuthenticatedUser {
        try await requireUser(request, alongside: SessionCompanion<Never>?.none, reads: .primary).0
    }

    /// `requireUser`, with `companion` sent in the same round trip as the session check. Its answer
    /// comes back only when it succeeded and, if it was built for a user, the session is that user's.
    /// The companion is built only when the database is asked: a session memory vouches for sends
    /// nothing, and its route reads on its own (often from memory too).
    ///
    /// Both are reads of `reads`: on the standby while the request reads there. A session the standby
    /// does not know may be one issued after what it has replayed: the primary decides, and the request
    /// then reads there too.
    func requireUser<Answer>(
        _ request: Request,
        alongside companion: @autoclosure () -> SessionCompanion<Answer>?,
        reads: RequestReads
    ) async throws -> (AuthenticatedUser, Answer?) {
        let token = try Self.sessionToken(request)
        let hash = notifier == nil ? [] : token.hash
        if let session = notifier?.session(userID: token.userID, hash: hash) {
            // Memory vouches for the session; the route runs its lookup on its own.
            return (AuthenticatedUser(id: token.userID, key: session.userKey), nil)
        }
        let companion = companion()
        return try await reads.read { standby in
            let (session, answer) = try await Self.check(token, alongside: companion, in: standby.map { SessionStore(client: $0.client) } ?? sessions)
            if let session {
                notifier?.remember(
                    session: ChangeNotifier.Session(userKey: session.userKey, expiresAt: session.expiresAt),
                    userID: token.userID,
                    hash: hash,
                    horizon: session.horizon
                )
                return (AuthenticatedUser(id: session.userID, key: session.userKey), answer)
            }
            guard let standby else { throw Self.invalidSession }
            standby.fellBack(.unknownSession)
            throw ReadReplica.Behind()
        }
    }

    private static func check<Answer>(
        _ token: SessionToken,
        alongside companion: SessionCompanion<Answer>?,
        in sessions: SessionStore
    ) async throws -> (LiveSession?, Answer?) {
        guard let companion else { return (try await sessions.authenticateWithExpiry(token), nil) }
        return try await sessions.authenticate(token, alongside: companion)
    }

    /// Admin routes: the admin token passes; a valid user session is recognised and refused (403);
    /// anything else is unauthenticated (401).
    func requireAdmin(_ request: Request) async throws {
        guard let presented = Self.bearerToken(request) else {
            throw APIError(.unauthorized, code: "unauthorized", message: "This route needs 'Authorization: Bearer <admin token>'.")
        }
        if let adminToken, ConstantTime.equals(presented, adminToken) { return }
        if let session = SessionToken(parsing: presented), try await sessions.isValid(session) {
            throw APIError(.forbidden, code: "forbidden", message: "A user session cannot call admin routes.")
        }
        throw APIError(.unauthorized, code: "unauthorized", message: "The bearer token is not valid.")
    }

    static let noSessionToken = APIError(.unauthorized, code: "unauthorized", message: "This route needs 'Authorization: Bearer <session token>'.")
    static let invalidSession = APIError(
        .unauthorized,
        code: "unauthorized",
        message: "The session token is not valid (unknown, revoked or expired)."
    )

    /// The session token the request presents; no database work, so a request without one costs none.
    static func sessionToken(_ request: Request) throws -> SessionToken {
        guard let presented = bearerToken(request) else { throw noSessionToken }
        guard let token = SessionToken(parsing: presented) else { throw invalidSession }
        return token
    }

    static func bearerToken(_ request: Request) -> String? {
        bearerToken(request.headers[.authorization])
    }

    /// The token of an `Authorization: Bearer <token>` header value.
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        // Trimmed by hand: Foundation's trimmingCharacters bridges through NSString on every request.
        var token = parts[1]
        while token.first == " " || token.first == "\t" { token = token.dropFirst() }
        while token.last == " " || token.last == "\t" { token = token.dropLast() }
        return token.isEmpty ? nil : String(token)
    }
}
