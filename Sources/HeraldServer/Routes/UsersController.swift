import Foundation
import HeraldCore
import HeraldServices
import HeraldStore
import Hummingbird

/// Admin routes for users and their sessions, and for erasing and exporting a user.
struct UsersController: Sendable {
    let users: UserStore
    let sessions: SessionStore
    let erasures: UserErasureStore
    let exports: UserExportStore
    /// Wakes the `ErasureService` after an erasure starts.
    let erasureWake: WakeSignal

    /// Session lifetimes: default 30 days, at most one year.
    static let defaultSessionLifetime = 30 * 24 * 3600
    static let sessionLifetimes = 60...(366 * 24 * 3600)

    func register(in routes: RouteRegistry) {
        routes.add(.put, "/v1/users/{user_id}", access: .admin) { request, context in
            try await upsertUser(request, context: context)
        }
        routes.add(.get, "/v1/users/{user_id}", access: .admin) { _, context in
            guard let user = try await users.get(try Self.userID(context)) else {
                throw APIError(.notFound, code: "user_not_found", message: "No user with this id.")
            }
            return UserBody(user)
        }
        routes.add(.get, "/v1/users", access: .admin) { request, _ in
            try await list(request)
        }
        routes.add(.post, "/v1/users/{user_id}/sessions", access: .admin) { request, context in
            try await createSession(request, context: context)
        }
        routes.add(.delete, "/v1/users/{user_id}/sessions", access: .admin) { _, context in
            let userID = try Self.userID(context)
            return RevokedBody(revoked: try await sessions.revokeAll(userID: userID))
        }
        routes.add(.delete, "/v1/users/{user_id}", access: .admin) { _, context in
            try await erase(context: context)
        }
        routes.add(.get, "/v1/users/{user_id}/erasure", access: .admin) { _, context in
            let userID = try Self.userID(context)
            guard let erasure = try await erasures.status(userID: userID) else {
                throw APIError(.notFound, code: "erasure_not_found", message: "This user id was not erased (or the record has expired).")
            }
            return ErasureBody(erasure)
        }
        routes.add(.get, "/v1/users/{user_id}/export", access: .admin) { _, context in
            try await export(context: context)
        }
    }

    struct SessionRequest: Decodable {
        var expiresIn: Int?

        enum CodingKeys: String, CodingKey {
            case expiresIn = "expires_in"
        }
    }

    struct SessionBody: ResponseEncodable {
        var userID: String
        var token: String
        var expiresAt: String

        enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case token
            case expiresAt = "expires_at"
        }
    }

    struct RevokedBody: ResponseEncodable {
        var revoked: Int
    }

    func createSession(_ request: Request, context: HeraldRequestContext) async throws -> EditedResponse<SessionBody> {
        let userID = try Self.userID(context)
        let options = try await RequestBody.decode(SessionRequest.self, from: request, context: context)
        let lifetime = options?.expiresIn ?? Self.defaultSessionLifetime
        guard Self.sessionLifetimes.contains(lifetime) else {
            throw APIError(
                .badRequest,
                code: "invalid_expires_in",
                message: "expires_in must be between \(Self.sessionLifetimes.lowerBound) and \(Self.sessionLifetimes.upperBound) seconds."
            )
        }
        guard let session = try await sessions.create(userID: userID, lifetime: lifetime) else {
            throw APIError(.notFound, code: "user_not_found", message: "No user with this id; create it with PUT /v1/users/{user_id} first.")
        }
        let body = SessionBody(userID: userID, token: session.token.text, expiresAt: RFC3339.string(from: session.expiresAt))
        return EditedResponse(status: .created, response: body)
    }

    /// The `{user_id}` path parameter, percent-decoded and validated.
    static func userID(_ context: HeraldRequestContext) throws -> String {
        guard let id = try context.parameters.require("user_id").removingPercentEncoding else {
            throw APIError(.badRequest, code: "invalid_user_id", message: "the user id is not valid percent-encoding")
        }
        if let problem = UserID.problem(with: id) {
            throw APIError(.badRequest, code: "invalid_user_id", message: problem)
        }
        return id
    }
}
