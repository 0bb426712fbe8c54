import Foundation
import HeraldCore
import Postgres

/// A live session, as one snapshot found it.
public struct LiveSession: Sendable, Equatable {
    public var userID: String
    public var userKey: Int64
    public var expiresAt: Date
    /// The snapshot's horizon: a revocation that this answer did not see has a transaction id at or
    /// above it (see `ChangeRecord`).
    public var horizon: Int64
}

/// Session tokens: issued by admins for a user, stored only as hashes, valid until they expire or are
/// revoked.
public struct SessionStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Issues a token valid for `lifetime` seconds; `nil` when the user does not exist.
    public func create(userID: String, lifetime: Int) async throws -> (token: SessionToken, expiresAt: Date)? {
        let token = SessionToken.generate(for: userID)
        do {
            let rows = try await client.query(
                """
                INSERT INTO sessions (user_id, token_hash, expires_at)
                VALUES (\(userID), \(PostgresBytes(token.hash)), now() + make_interval(secs => \(Double(lifetime))))
                RETURNING expires_at
                """
            )
            return (token, try rows[0].decode(Date.self))
        } catch let error as PostgresError where error.code == .foreignKeyViolation {
            return nil
        }
    }

    /// True when `token` is a live session of its user.
    public func isValid(_ token: SessionToken) async throws -> Bool {
        let rows = try await client.query(
            """
            SELECT 1 FROM sessions
            WHERE user_id = \(token.userID) AND token_hash = \(PostgresBytes(token.hash)) AND expires_at > now()
            """
        )
        return !rows.isEmpty
    }

    /// The user a live session token belongs to, with the user's internal key; `nil` when the token is
    /// unknown, revoked or expired.
    public func authenticate(_ token: SessionToken) async throws -> (userID: String, userKey: Int64)? {
        try await authenticateWithExpiry(token).map { ($0.userID, $0.userKey) }
    }

    /// `authenticate`, with the session's expiry (live streams close when it passes) and the horizon
    /// of the snapshot that found it.
    public func authenticateWithExpiry(_ token: SessionToken) async throws -> LiveSession? {
        try Self.decodeSession(token, try await client.pipelinedQuery(Self.sessionQuery(token)))
    }

    /// `authenticate`, with `companion` sent in the same round trip. Its answer comes back only when
    /// the session is live, the statement succeeded and, if it reads a user's data, the session is that
    /// user's; otherwise `nil`, and the caller runs its lookup the ordinary way (and reports what that
    /// finds).
    public func authenticate<Answer>(
        _ token: SessionToken,
        alongside companion: SessionCompanion<Answer>
    ) async throws -> (session: LiveSession?, answer: Answer?) {
        let outcomes = try await client.pipelinedQueries([Self.sessionQuery(token), companion.query])
        guard let session = try Self.decodeSession(token, try outcomes[0].get()) else { return (nil, nil) }
        guard companion.userKey == nil || companion.userKey == session.userKey, case .success(let rows) = outcomes[1] else {
            return (session, nil)
        }
        return (session, try companion.decode(rows))
    }

    private static func sessionQuery(_ token: SessionToken) -> PostgresQuery {
        """
        SELECT u.key, s.expires_at, pg_snapshot_xmin(pg_current_snapshot())::text::bigint FROM sessions s JOIN users u ON u.id = s.user_id
        WHERE s.user_id = \(token.userID) AND s.token_hash = \(PostgresBytes(token.hash)) AND s.expires_at > now()
        """
    }

    private static func decodeSession(_ token: SessionToken, _ rows: PostgresResult) throws -> LiveSession? {
        try rows.first.map { row in
            let (key, expiresAt, horizon) = try row.decode((Int64, Date, Int64).self)
            return LiveSession(userID: token.userID, userKey: key, expiresAt: expiresAt, horizon: horizon)
        }
    }

    /// Revokes every session of the user; returns how many there were. Live streams opened with them
    /// are closed (every process's hub hears of it).
    public func revokeAll(userID: String) async throws -> Int {
        try await client.withRetryingTransaction { connection in
            let revoked = try await connection.query("DELETE FROM sessions WHERE user_id = \(userID)").affectedRows
            if let key = try await connection.query("SELECT key FROM users WHERE id = \(userID)").first?.decode(Int64.self) {
                try await LiveHint.sessionsRevoked(userKey: key).send(on: connection)
            }
            return revoked
        }
    }

    /// Removes sessions that have expired (they no longer authenticate anything); returns how many.
    public func deleteExpired() async throws -> Int {
        try await client.query("DELETE FROM sessions WHERE expires_at <= now()").affectedRows
    }

    /// Which of the given sessions — each its user's id and the lowercase hex of its token's hash —
    /// are still live (neither revoked nor expired). One statement for any number, on the primary key.
    public func liveSessions(among sessions: [(userID: String, hash: String)]) async throws -> Set<String> {
        guard !sessions.isEmpty else { return [] }
        let rows = try await client.query(
            """
            SELECT q.hash FROM unnest(\(sessions.map(\.userID))::text[], \(sessions.map(\.hash))::text[]) AS q(user_id, hash)
            JOIN sessions s ON s.user_id = q.user_id AND s.token_hash = decode(q.hash, 'hex')
            WHERE s.expires_at > now()
            """
        )
        return Set(try rows.map { try $0.decode(String.self) })
    }
}
