import Foundation
import HeraldCore
import Postgres

/// A user's choice for one category of a channel; `nil` follows the channel's default.
public struct CategoryChoice: Sendable, Equatable {
    public var inbox: Bool?
    public var push: Bool?

    public init(inbox: Bool? = nil, push: Bool? = nil) {
        self.inbox = inbox
        self.push = push
    }
}

/// Users' choices per category of a channel (`sql/0025_category_preferences.sql`): sends apply them as
/// a set (`CategoryPreferenceSQL`), alerts per recipient (`AlertStore`).
public struct CategoryPreferenceStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// The user's choices in the channel, by category; categories they never chose for are absent.
    public func choices(userKey: Int64, channelKey: Int64) async throws -> [String: CategoryChoice] {
        var choices: [String: CategoryChoice] = [:]
        for row in try await client.query(
            "SELECT category, inbox, push FROM category_preferences WHERE user_key = \(userKey) AND channel_key = \(channelKey)"
        ) {
            let (category, inbox, push) = try row.decode((String, Bool?, Bool?).self)
            choices[category] = CategoryChoice(inbox: inbox, push: push)
        }
        return choices
    }

    /// Changes the user's choice for the category: each of `inbox` and `push` that is non-nil is set
    /// to its value (`.some(nil)`: back to the channel's default); the other stays. Returns the choice
    /// after. A choice of nothing leaves no row.
    public func set(userKey: Int64, channelKey: Int64, category: String, inbox: Bool??, push: Bool??) async throws -> CategoryChoice {
        try await client.withRetryingTransaction { connection in
            // Merged in the statement, on the row it locks: two requests changing one field each, at
            // once, both stand.
            let row = try await connection.query(
                """
                INSERT INTO category_preferences AS cp (user_key, channel_key, category, inbox, push)
                VALUES (\(userKey), \(channelKey), \(category), \(inbox ?? nil), \(push ?? nil))
                ON CONFLICT (user_key, channel_key, category) DO UPDATE SET
                    inbox = CASE WHEN \(inbox != nil) THEN EXCLUDED.inbox ELSE cp.inbox END,
                    push = CASE WHEN \(push != nil) THEN EXCLUDED.push ELSE cp.push END,
                    updated_at = now()
                RETURNING cp.inbox, cp.push
                """
            )[0]
            let choice = try row.decode((Bool?, Bool?).self)
            if choice.0 == nil, choice.1 == nil {
                try await connection.query(
                    "DELETE FROM category_preferences WHERE user_key = \(userKey) AND channel_key = \(channelKey) AND category = \(category)"
                )
            }
            return CategoryChoice(inbox: choice.0, push: choice.1)
        }
    }
}
