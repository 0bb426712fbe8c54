import Postgres

/// The category preferences' rule as SQL that sends inline (`sql/0025_category_preferences.sql`).
enum CategoryPreferenceSQL {
    /// True for user key `user` when notifications of `category` in channel key `channel` reach their
    /// collection: by their choice, else by the category's default. The default is known per send, so
    /// each form probes only the choices that can change the answer — refusals under a default of
    /// on, consents under a default of off — by the channel's index, which the planner can also
    /// read as one set for a fan-out's range of users.
    static func inboxAdmits(user: PostgresQuery, channel: PostgresQuery, category: PostgresQuery, inboxDefault: Bool) -> PostgresQuery {
        let probe: PostgresQuery = """
            SELECT 1 FROM category_preferences cp
            WHERE cp.channel_key = \(channel) AND cp.category = \(category) AND cp.user_key = \(user) AND cp.inbox = \(!inboxDefault ? "true" : "false" as PostgresQuery)
            """
        return inboxDefault ? "NOT EXISTS (\(probe))" : "EXISTS (\(probe))"
    }
}
