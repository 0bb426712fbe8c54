import Foundation
import Postgres

/// The console's list of recent sends, newest first.
public struct ConsoleNotificationStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    public struct Sent: Sendable, Equatable {
        public var id: Int64
        public var channelURL: String
        public var templateKey: String
        public var audience: String
        public var audienceSize: Int64
        public var recipientCount: Int64
        public var pushesSent: Int64
        public var fanoutRunning: Bool
        public var deleted: Bool
        public var createdAt: Date
    }

    /// Up to `limit` notifications older than `before` (the newest without it).
    public func recent(before: Int64?, limit: Int) async throws -> [Sent] {
        try await client.query(
            """
            SELECT n.id, c.url, n.template_key, n.audience, n.audience_size, n.recipient_count, n.pushes_sent,
                n.fanout_state = 'running', n.deleted_at IS NOT NULL, n.created_at
            FROM notifications n JOIN channels c ON c.key = n.channel_key
            WHERE n.id < \(before ?? Int64.max)
            ORDER BY n.id DESC LIMIT \(limit)
            """
        ).map { row in
            let (id, url, template, audience, size, recipients, pushes, running, deleted, created) = try row.decode(
                (Int64, String, String, String, Int64, Int64, Int64, Bool, Bool, Date).self
            )
            return Sent(
                id: id,
                channelURL: url,
                templateKey: template,
                audience: audience,
                audienceSize: size,
                recipientCount: recipients,
                pushesSent: pushes,
                fanoutRunning: running,
                deleted: deleted,
                createdAt: created
            )
        }
    }
}
