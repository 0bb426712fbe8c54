import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// Decides who a request comes from, by its `Authorization: Bearer …` header.
struct Authenticator: Sendable {
    /// The admin token; `nil` refuses every admin request.
    let adminToken: String?
    let sessions: SessionStore

    /// Who may call a route.
    enum Access: Sendable {
        case anyone
        case admin
    }

    func authorize(_ request: Request, for access: Access) async throws {
        switch access {
        case .anyone: return
        case .admin: try await requireAdmin(request)
        }
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

    static func bearerToken(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : String(token)
    }
}
