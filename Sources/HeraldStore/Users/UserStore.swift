import Foundation
import HeraldCore
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
        try await upsert(id: id, UserChange(nickname: nickname, profileURL: profileURL))
    }

    /// Creates the user with `change` over the defaults, or applies it to the stored user. Returns the
    /// user and whether it was created. Properties that would outgrow
    /// `UserChange.maximumPropertiesBytes` fail the table's check (`PostgresError.Code.checkViolation`)
    /// and change nothing.
    public func upsert(id: String, _ change: UserChange) async throws -> (user: User, created: Bool) {
        let given = change.properties ?? [:]
        let set = given.filter { $0.value != .null }
        let removed = given.filter { $0.value == .null }.keys.sorted()
        let setJSON = try PostgresJSONB(utf8: Array(JSONEncoder().encode(set)))
        let setsLocale = change.locale != nil
        let locale = change.locale ?? nil
        let rows = try await client.query(
            """
            INSERT INTO users AS u (id, nickname, profile_url, locale, time_zone, properties)
            VALUES (\(id), coalesce(\(change.nickname), ''), coalesce(\(change.profileURL), ''), \(locale),
                coalesce(\(change.timeZone), 'UTC'), \(setJSON))
            ON CONFLICT (id) DO UPDATE SET
                nickname = coalesce(\(change.nickname), u.nickname),
                profile_url = coalesce(\(change.profileURL), u.profile_url),
                locale = CASE WHEN \(setsLocale) THEN \(locale) ELSE u.locale END,
                time_zone = coalesce(\(change.timeZone), u.time_zone),
                properties = (u.properties || \(setJSON)) - \(removed)::text[],
                updated_at = now()
            RETURNING \(Self.columns), (xmax = 0) AS created
            """
        )
        return (try Self.user(rows[0]), try rows[0].decode(column: Self.columnCount, as: Bool.self))
    }

    /// The user with this id; `nil` when there is none.
    public func get(_ id: String) async throws -> User? {
        try await client.query("SELECT \(Self.columns) FROM users u WHERE id = \(id)").first.map(Self.user)
    }

    /// The profiles of the users with these ids, by id; ids of no user are left out.
    public func profiles(_ ids: [String]) async throws -> [String: RecipientProfile] {
        guard !ids.isEmpty else { return [:] }
        var result: [String: RecipientProfile] = [:]
        for row in try await client.query("SELECT \(Self.columns) FROM users u WHERE u.id = ANY(\(ids))") {
            let user = try Self.user(row)
            result[user.id] = user.profile
        }
        return result
    }

    /// Up to `limit` users with ids after `after`, in id order, whose properties have every value in
    /// `properties` (a value matches a string property of that text, or the number or boolean it spells).
    public func list(after: String?, limit: Int, properties: [(key: String, value: String)] = []) async throws -> [User] {
        var filter: PostgresQuery = "true"
        for (key, text) in properties {
            let asString = try PostgresJSONB(utf8: Array(JSONEncoder().encode([key: JSONValue.string(text)])))
            // Containment answers from the GIN index; a value that reads as a JSON number or boolean
            // also matches as one.
            var match: PostgresQuery = "u.properties @> \(asString)"
            if let scalar = Self.scalar(text) {
                match = "(\(match) OR u.properties @> \(try PostgresJSONB(utf8: Array(JSONEncoder().encode([key: scalar])))))"
            }
            filter = "\(filter) AND \(match)"
        }
        return try await client.query(
            "SELECT \(Self.columns) FROM users u WHERE u.id > \(after ?? "") AND \(filter) ORDER BY u.id LIMIT \(limit)"
        ).map(Self.user)
    }

    /// The columns `user` reads, of `users u`.
    static let columns: PostgresQuery =
        "u.id, u.nickname, u.profile_url, u.locale, u.time_zone, u.properties, u.created_at, u.updated_at"

    /// How many columns `columns` names.
    static let columnCount = 8

    static func user(_ row: PostgresRow) throws -> User {
        let (id, nickname, profileURL, locale, timeZone) = try row.decode((String, String, String, String?, String).self)
        let properties = try row.decode(column: 5, as: PostgresJSONB.self)
        return User(
            id: id,
            nickname: nickname,
            profileURL: profileURL,
            locale: locale,
            timeZone: timeZone,
            properties: try JSONDecoder().decode([String: JSONValue].self, from: Data(properties.utf8)),
            createdAt: try row.decode(column: 6, as: PostgresTimestamp.self).date,
            updatedAt: try row.decode(column: 7, as: PostgresTimestamp.self).date
        )
    }

    /// The number or boolean a filter's text spells in canonical form (`30`, `2.5`, `true`); `nil` for
    /// any other text, which matches only as a string.
    static func scalar(_ text: String) -> JSONValue? {
        switch text {
        case "true": return .bool(true)
        case "false": return .bool(false)
        default:
            guard let number = Double(text), number.isFinite, text.first != "+", !text.hasPrefix("."), !text.hasSuffix(".") else { return nil }
            return .number(number)
        }
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
