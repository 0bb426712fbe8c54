import Postgres

extension ChannelStore {
    /// What deleting a channel takes with it: its notifications and the copies users hold of them.
    public struct Usage: Sendable, Equatable {
        public var notifications: Int64
        public var copies: Int64
    }

    /// The channel's live notifications and their copies (from each notification's recipient count,
    /// not by counting copies); `nil` when there is no such channel.
    public func usage(_ url: String) async throws -> Usage? {
        let rows = try await client.query(
            """
            SELECT count(n.id), coalesce(sum(n.recipient_count), 0)::bigint
            FROM channels c LEFT JOIN notifications n ON n.channel_key = c.key AND n.deleted_at IS NULL
            WHERE c.url = \(url)
            GROUP BY c.key
            """
        )
        guard let row = rows.first else { return nil }
        let (notifications, copies) = try row.decode((Int64, Int64).self)
        return Usage(notifications: notifications, copies: copies)
    }
}
