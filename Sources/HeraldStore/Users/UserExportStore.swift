import Postgres

/// Everything Herald holds about one user, read a page at a time for `GET /v1/users/{user_id}/export`:
/// each row comes out of PostgreSQL as JSON text, so a user with a million copies is streamed, never
/// held in memory. Secrets are not part of it: sessions are listed by their times, not their tokens.
public struct UserExportStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// A part of the export: a JSON array of objects, in a stable order that pages by `(first, second)`.
    public enum Section: String, Sendable, CaseIterable {
        case sessions
        case devices
        case pushPreferences = "push_preferences"
        case channelPushPreferences = "channel_push_preferences"
        case channels
        case notifications
        case events
        case pushFailures = "push_failures"
        case topics
        case categoryPreferences = "category_preferences"
    }

    /// Where a page ended; the next page starts after it.
    public struct Cursor: Sendable, Equatable {
        public var first: Int64
        public var second: Int64

        public static let start = Cursor(first: .min, second: .min)
    }

    /// The user's key and their own row (`user_id`, nickname, profile URL, locale, time zone,
    /// properties, times) as JSON; `nil` when
    /// there is no such user.
    public func user(_ userID: String) async throws -> (key: Int64, json: [UInt8])? {
        guard
            let row = try await client.query(
                """
                SELECT key, json_build_object('user_id', id, 'nickname', nickname, 'profile_url', profile_url,
                    'locale', locale, 'time_zone', time_zone, 'properties', properties,
                    'created_at', \(TimeSQL.rfc3339("created_at")), 'updated_at', \(TimeSQL.rfc3339("updated_at")))::text
                FROM users WHERE id = \(userID)
                """
            ).first
        else { return nil }
        let (key, json) = try row.decode((Int64, String).self)
        return (key, Array(json.utf8))
    }

    /// Up to `limit` objects of the section after `cursor`, and the cursor of the last one (`nil` when
    /// the page is empty).
    public func page(_ section: Section, userKey: Int64, after cursor: Cursor, limit: Int) async throws -> (objects: [[UInt8]], last: Cursor?) {
        let rows = try await client.query(Self.query(section, userKey: userKey, after: cursor, limit: limit))
        var objects: [[UInt8]] = []
        objects.reserveCapacity(rows.count)
        var last: Cursor?
        for row in rows {
            let (first, second, json) = try row.decode((Int64, Int64, String).self)
            objects.append(Array(json.utf8))
            last = Cursor(first: first, second: second)
        }
        return (objects, last)
    }

    // MARK: - Private

    /// Each section's query: `(first, second, json)` rows in `(first, second)` order after the cursor.
    private static func query(_ section: Section, userKey key: Int64, after cursor: Cursor, limit: Int) -> PostgresQuery {
        let (a, b) = (cursor.first, cursor.second)
        switch section {
        case .sessions:
            // The tokens themselves are never stored; a session is its times. (The hash's first 8 bytes
            // only order sessions created in the same microsecond.)
            return """
                SELECT a, b, json FROM (
                    SELECT (extract(epoch FROM s.created_at) * 1000000)::bigint AS a,
                        ('x' || encode(substr(s.token_hash, 1, 8), 'hex'))::bit(64)::bigint AS b,
                        json_build_object('created_at', \(TimeSQL.rfc3339("s.created_at")),
                            'expires_at', \(TimeSQL.rfc3339("s.expires_at")))::text AS json
                    FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.key = \(key)
                ) AS q WHERE (a, b) > (\(a), \(b)) ORDER BY a, b LIMIT \(limit)
                """
        case .devices:
            return """
                SELECT id, 0, json_build_object('service', devices.service, 'token', token, 'environment', environment, 'topic', topic,
                    'created_at', \(TimeSQL.rfc3339("created_at")), 'registered_at', \(TimeSQL.rfc3339("registered_at")),
                    'last_push_at', \(TimeSQL.rfc3339("p.last_push_at")), 'last_synced_at', \(TimeSQL.rfc3339("p.last_synced_at")))::text
                FROM devices JOIN device_push_state p ON p.device_id = devices.id
                WHERE user_key = \(key) AND (id, 0::bigint) > (\(a), \(b)) ORDER BY id LIMIT \(limit)
                """
        case .pushPreferences:
            return """
                SELECT user_key, 0, (to_jsonb(p) - 'user_key' - 'updated_at'
                    || jsonb_build_object('updated_at', \(TimeSQL.rfc3339("p.updated_at"))))::text
                FROM push_preferences p WHERE user_key = \(key) AND (user_key, 0::bigint) > (\(a), \(b)) LIMIT \(limit)
                """
        case .channelPushPreferences:
            return """
                SELECT p.channel_key, 0, json_build_object('channel_url', c.url, 'trigger_option', p.trigger_option)::text
                FROM channel_push_preferences p JOIN channels c ON c.key = p.channel_key
                WHERE p.user_key = \(key) AND (p.channel_key, 0::bigint) > (\(a), \(b)) ORDER BY p.channel_key LIMIT \(limit)
                """
        case .channels:
            return """
                SELECT s.channel_key, 0, json_build_object('channel_url', c.url, 'unread_count', herald_unread(s.user_key, s.channel_key),
                    'last_read_at', \(TimeSQL.rfc3339("s.last_read_at")), 'last_seen_at', \(TimeSQL.rfc3339("s.last_seen_at")),
                    'last_activity_at', \(TimeSQL.rfc3339("s.last_activity_at")), 'opened', s.opened)::text
                FROM channel_states s JOIN channels c ON c.key = s.channel_key
                WHERE s.user_key = \(key) AND (s.channel_key, 0::bigint) > (\(a), \(b)) ORDER BY s.channel_key LIMIT \(limit)
                """
        case .notifications:
            return """
                SELECT r.channel_key, r.notification_id, json_build_object('notification_id', r.notification_id, 'channel_url', c.url,
                    'created_at', \(TimeSQL.rfc3339("n.created_at")),
                    'status', CASE r.status WHEN 0 THEN 'sent' WHEN 1 THEN 'delivered' ELSE 'read' END,
                    'delivered_at', \(TimeSQL.rfc3339("r.delivered_at")), 'read_at', \(TimeSQL.rfc3339(NotificationStore.readAt)), 'deleted', r.deleted,
                    'archived', r.archived, 'actions_done', coalesce(r.actions_done, '{}'),
                    'data', CASE WHEN r.deleted THEN NULL ELSE \(TranslationSQL.data) END,
                    'push_title', CASE WHEN r.deleted THEN NULL ELSE \(TranslationSQL.pushTitle) END,
                    'push_body', CASE WHEN r.deleted THEN NULL ELSE \(TranslationSQL.pushBody) END,
                    'category', n.category, 'tags', n.tags)::text
                FROM notification_recipients r
                JOIN notifications n ON n.id = r.notification_id
                JOIN channels c ON c.key = r.channel_key
                WHERE r.user_key = \(key) AND (r.channel_key, r.notification_id) > (\(a), \(b))
                ORDER BY r.channel_key, r.notification_id LIMIT \(limit)
                """
        case .events:
            return """
                SELECT notification_id, kind, json_build_object('notification_id', notification_id,
                    'kind', CASE kind WHEN 1 THEN 'viewed' WHEN 2 THEN 'clicked' WHEN 3 THEN 'acted' ELSE 'throttled' END, 'count', count,
                    'first_at', \(TimeSQL.rfc3339("first_at")), 'last_at', \(TimeSQL.rfc3339("last_at")))::text
                FROM notification_events WHERE user_key = \(key) AND (notification_id, kind::bigint) > (\(a), \(b))
                ORDER BY notification_id, kind LIMIT \(limit)
                """
        case .pushFailures:
            return """
                SELECT id, 0, json_build_object('service', service, 'device_token', device_token, 'environment', environment,
                    'topic', topic,
                    'status', status, 'reason', reason, 'attempts', attempts, 'token_removed', token_removed,
                    'failed_at', \(TimeSQL.rfc3339("failed_at")))::text
                FROM push_failures WHERE user_key = \(key) AND (id, 0::bigint) > (\(a), \(b)) ORDER BY id LIMIT \(limit)
                """
        case .topics:
            return """
                SELECT s.topic_key, 0, json_build_object('topic_id', t.id, 'muted', s.muted,
                    'subscribed_at', \(TimeSQL.rfc3339("s.created_at")))::text
                FROM topic_subscriptions s JOIN topics t ON t.key = s.topic_key
                WHERE s.user_key = \(key) AND (s.topic_key, 0::bigint) > (\(a), \(b)) ORDER BY s.topic_key LIMIT \(limit)
                """
        case .categoryPreferences:
            // Paged by channel, then by the category's place among the user's choices in that channel.
            return """
                SELECT p.channel_key, n, json_build_object('channel_url', c.url, 'category', p.category, 'inbox', p.inbox, 'push', p.push,
                    'updated_at', \(TimeSQL.rfc3339("p.updated_at")))::text
                FROM (
                    SELECT *, row_number() OVER (PARTITION BY channel_key ORDER BY category) AS n FROM category_preferences WHERE user_key = \(key)
                ) AS p JOIN channels c ON c.key = p.channel_key
                WHERE (p.channel_key, n) > (\(a), \(b)) ORDER BY p.channel_key, n LIMIT \(limit)
                """
        }
    }
}
