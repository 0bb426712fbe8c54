import Foundation
import HeraldCore
import Postgres

/// Sign-ins to the admin console: a random token in an HttpOnly cookie, stored only as its SHA-256,
/// with the CSRF token its forms carry.
public struct ConsoleSessionStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// A live sign-in: the CSRF token its forms must carry and when it ends.
    public struct Session: Sendable, Equatable {
        public var csrfToken: String
        public var expiresAt: Date
    }

    /// Starts a sign-in valid for `lifetime`, made with `adminToken`; answers the cookie's token and the
    /// session.
    public func create(lifetime: Duration, adminToken: String) async throws -> (token: String, session: Session) {
        let token = SecureRandom.hexToken()
        let csrf = SecureRandom.hexToken()
        let rows = try await client.query(
            """
            INSERT INTO console_sessions (token_hash, csrf_token, admin_token_hash, expires_at)
            VALUES (\(PostgresBytes(SHA256.digest(Array(token.utf8)))), \(csrf), \(PostgresBytes(SHA256.digest(Array(adminToken.utf8)))),
                now() + make_interval(secs => \(Double(lifetime.components.seconds))))
            RETURNING expires_at
            """
        )
        return (token, Session(csrfToken: csrf, expiresAt: try rows[0].decode(Date.self)))
    }

    /// The live sign-in the cookie's token names, made with `adminToken`; `nil` when unknown, signed
    /// out, expired or made with another admin token.
    public func session(token: String, adminToken: String) async throws -> Session? {
        let rows = try await client.query(
            """
            SELECT csrf_token, expires_at FROM console_sessions
            WHERE token_hash = \(PostgresBytes(SHA256.digest(Array(token.utf8)))) AND expires_at > now()
                AND admin_token_hash = \(PostgresBytes(SHA256.digest(Array(adminToken.utf8))))
            """
        )
        guard let row = rows.first else { return nil }
        let (csrf, expiresAt) = try row.decode((String, Date).self)
        return Session(csrfToken: csrf, expiresAt: expiresAt)
    }

    /// Ends the sign-in the token names.
    public func delete(token: String) async throws {
        try await client.query("DELETE FROM console_sessions WHERE token_hash = \(PostgresBytes(SHA256.digest(Array(token.utf8))))")
    }

    /// Removes expired sign-ins; answers how many.
    public func deleteExpired() async throws -> Int {
        try await client.query("DELETE FROM console_sessions WHERE expires_at <= now() RETURNING 1").count
    }
}
