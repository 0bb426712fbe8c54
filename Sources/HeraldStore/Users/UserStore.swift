import Postgres

/// Users: create or update, look up.
public struct UserStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// The user's internal key (`users.key`), by id; `nil` when there is no such user.
    public func key(_ userID: String) async throws -> Int64? {
        try await client.query("SELECT key FROM users WHERE id = \(userID)").first?.decode(Int64.self)
    }

    /// Creates the user, or updates the fields given (`nil` keeps the stored value; a new user gets
    /// empty strings). Returns the user and whether it was created.
    public func upsert(id: String, nickname: String?, profileURL: String?) async throws -> (user: User, created: Bool) {
        let rows = try await client.query(
            """
            INSERT INTO users AS u (id, nickname, profile_url)
            VALUES (\(id), coalesce(\(nickname), ''), coalesce(\(profileURL), ''))
            ON CONFLICT (id) DO UPDATE SET
                nickname = coalesce(\(nickname), u.nickname),
                profile_url = coalesce(\(profileURL), u.profile_url),
                updated_at = now()
            RETURNING id, nickname, profile_url, created_at, updated_at, (xmax = 0) AS created
            """
        )
        let row = try rows[0].decode((String, String, String, PostgresTimestamp, PostgresTimestamp, Bool).self)
        return (User(id: row.0, nickname: row.1, profileURL: row.2, createdAt: row.3.date, updatedAt: row.4.date), row.5)
    }

    /// The ids that name no user, in the order given (at most `NotificationStore.listedIDLimit` of
    /// them) and how many there are in all; `nil` when every id names a user. One statement, however
    /// many ids.
    static func unknown(_ ids: [String], on connection: PostgresConnection) async throws -> (listed: [String], total: Int)? {
        guard !ids.isEmpty else { return nil }
        let rows = try await connection.query(
            """
            SELECT t.id FROM unnest(\(ids)::text[]) WITH ORDINALITY AS t(id, position)
            WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = t.id)
            ORDER BY t.position
            """
        )
        guard !rows.isEmpty else { return nil }
        return (try rows.prefix(NotificationStore.listedIDLimit).map { try $0.decode(String.self) }, rows.count)
    }
}
