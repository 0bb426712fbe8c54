import Foundation
import Postgres

/// Topics and their subscriptions (`sql/0024_topics.sql`). Subscribers are added and removed as sets,
/// one statement for a whole request, however many users it names.
public struct TopicStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Creates the topic or changes its name and whether users may subscribe themselves. Returns it
    /// and whether it was created.
    public func put(id: String, name: String, selfSubscribe: Bool) async throws -> (topic: Topic, created: Bool) {
        let row = try await client.query(
            """
            INSERT INTO topics AS t (id, name, self_subscribe) VALUES (\(id), \(name), \(selfSubscribe))
            ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, self_subscribe = EXCLUDED.self_subscribe,
                updated_at = CASE WHEN (t.name, t.self_subscribe) = (EXCLUDED.name, EXCLUDED.self_subscribe) THEN t.updated_at ELSE now() END
            RETURNING \(Self.columns("t")), (xmax = 0)
            """
        )[0]
        return (try Self.decode(row), try row.decode(column: 5, as: Bool.self))
    }

    /// The topic with its subscriber counts; `nil` when there is none.
    public func get(_ id: String) async throws -> (topic: Topic, counts: TopicCounts)? {
        guard
            let row = try await client.query(
                """
                SELECT \(Self.columns("t")),
                    (SELECT count(*) FROM topic_subscriptions s WHERE s.topic_key = t.key),
                    (SELECT count(*) FROM topic_subscriptions s WHERE s.topic_key = t.key AND s.muted)
                FROM topics t WHERE t.id = \(id)
                """
            ).first
        else { return nil }
        let (subscribers, muted) = (try row.decode(column: 5, as: Int64.self), try row.decode(column: 6, as: Int64.self))
        return (try Self.decode(row), TopicCounts(subscribers: subscribers, muted: muted))
    }

    /// Topics in id order, `limit` after the id `after`.
    public func list(after: String?, limit: Int) async throws -> [Topic] {
        try await client.query(
            "SELECT \(Self.columns("t")) FROM topics t WHERE t.id > \(after ?? "") ORDER BY t.id LIMIT \(limit)"
        ).map(Self.decode)
    }

    /// Deletes the topic and its subscriptions; false when there was none. Notifications sent to it
    /// keep its id; a fan-out still running finds no more subscribers.
    public func delete(_ id: String) async throws -> Bool {
        try await client.query("DELETE FROM topics WHERE id = \(id) RETURNING 1").count == 1
    }

    /// Subscribes the users (not muted); those already subscribed stay as they are. Every id must
    /// name a user, or nothing is added. Returns how many subscriptions are new.
    public func addSubscribers(topic: String, userIDs: [String]) async throws -> Int {
        try await client.withRetryingTransaction { connection in
            let key = try await Self.lock(topic, on: connection).key
            if let (listed, total) = try await UserStore.unknown(userIDs, on: connection) {
                throw TopicStoreError.unknownUsers(listed, total: total)
            }
            // In user-key order, the order every writer of a topic's rows takes their locks in.
            return try await connection.query(
                """
                INSERT INTO topic_subscriptions (topic_key, user_key)
                SELECT \(key), u.key FROM unnest(\(userIDs)::text[]) AS t(id) JOIN users u ON u.id = t.id
                ORDER BY u.key
                ON CONFLICT DO NOTHING
                """
            ).affectedRows
        }
    }

    /// Unsubscribes the users; ids of users who were not subscribers (or of no user) change nothing.
    /// Returns how many subscriptions ended.
    public func removeSubscribers(topic: String, userIDs: [String]) async throws -> Int {
        try await client.withRetryingTransaction { connection in
            let key = try await Self.lock(topic, on: connection).key
            return try await connection.query(
                """
                DELETE FROM topic_subscriptions s USING unnest(\(userIDs)::text[]) AS t(id) JOIN users u ON u.id = t.id
                WHERE s.topic_key = \(key) AND s.user_key = u.key
                """
            ).affectedRows
        }
    }

    /// The topic's subscribers in user-key order, `limit` after the user key `after`; `nil` when there
    /// is no such topic.
    public func subscribers(topic: String, after: Int64?, limit: Int) async throws -> [TopicSubscription]? {
        try await client.withConnection { connection in
            guard let (key, topic) = try await Self.find(topic, on: connection) else { return nil }
            return try await connection.query(
                """
                SELECT s.user_key, u.id, s.muted, s.created_at FROM topic_subscriptions s JOIN users u ON u.key = s.user_key
                WHERE s.topic_key = \(key) AND s.user_key > \(after ?? 0) ORDER BY s.user_key LIMIT \(limit)
                """
            ).map { row in
                let (userKey, userID, muted, at) = try row.decode((Int64, String, Bool, Date).self)
                return TopicSubscription(userKey: userKey, userID: userID, topic: topic, muted: muted, subscribedAt: at)
            }
        }
    }

    // MARK: - A user's own

    /// The user's subscriptions in topic id order, `limit` after the topic id `after`.
    public func subscriptions(userKey: Int64, after: String?, limit: Int) async throws -> [TopicSubscription] {
        try await client.query(
            """
            SELECT \(Self.columns("t")), s.user_key, u.id, s.muted, s.created_at
            FROM topic_subscriptions s JOIN topics t ON t.key = s.topic_key JOIN users u ON u.key = s.user_key
            WHERE s.user_key = \(userKey) AND t.id > \(after ?? "") ORDER BY t.id LIMIT \(limit)
            """
        ).map(Self.decodeSubscription)
    }

    /// Follows the topic (if users may subscribe themselves) or, for a subscription the user already
    /// has, however it was made, only sets `muted` when it is given. Returns the subscription and
    /// whether it is new.
    public func follow(userKey: Int64, topic: String, muted: Bool?) async throws -> (subscription: TopicSubscription, created: Bool) {
        try await client.withRetryingTransaction { connection in
            let (key, found) = try await Self.lock(topic, on: connection)
            // A topic users may not join is only ever updated here: an insert could bring back a
            // subscription the admin removed between a check and the write.
            let saved: PostgresQuery =
                found.selfSubscribe
                ? """
                INSERT INTO topic_subscriptions AS s (topic_key, user_key, muted) VALUES (\(key), \(userKey), coalesce(\(muted), false))
                ON CONFLICT (topic_key, user_key) DO UPDATE SET muted = coalesce(\(muted), s.muted)
                RETURNING s.*, (s.xmax = 0) AS created
                """
                : """
                UPDATE topic_subscriptions s SET muted = coalesce(\(muted), s.muted) WHERE s.topic_key = \(key) AND s.user_key = \(userKey)
                RETURNING s.*, false AS created
                """
            guard
                let row = try await connection.query(
                    """
                    WITH saved AS (\(saved))
                    SELECT \(Self.columns("t")), saved.user_key, u.id, saved.muted, saved.created_at, saved.created
                    FROM saved JOIN topics t ON t.key = saved.topic_key JOIN users u ON u.key = saved.user_key
                    """
                ).first
            else {
                throw TopicStoreError.notSelfSubscribe
            }
            return (try Self.decodeSubscription(row), try row.decode(column: 9, as: Bool.self))
        }
    }

    /// Unfollows the topic, if users may subscribe themselves to it. False when the user was not
    /// subscribed.
    public func unfollow(userKey: Int64, topic: String) async throws -> Bool {
        try await client.withRetryingTransaction { connection in
            let (key, found) = try await Self.lock(topic, on: connection)
            guard found.selfSubscribe else { throw TopicStoreError.notSelfSubscribe }
            return try await connection.query(
                "DELETE FROM topic_subscriptions WHERE topic_key = \(key) AND user_key = \(userKey) RETURNING 1"
            ).count == 1
        }
    }

    // MARK: - Private

    static func columns(_ alias: PostgresQuery) -> PostgresQuery {
        "\(alias).id, \(alias).name, \(alias).self_subscribe, \(alias).created_at, \(alias).updated_at"
    }

    static func decode(_ row: PostgresRow) throws -> Topic {
        let (id, name, selfSubscribe, createdAt, updatedAt) = try row.decode((String, String, Bool, Date, Date).self)
        return Topic(id: id, name: name, selfSubscribe: selfSubscribe, createdAt: createdAt, updatedAt: updatedAt)
    }

    static func decodeSubscription(_ row: PostgresRow) throws -> TopicSubscription {
        let topic = try decode(row)
        return TopicSubscription(
            userKey: try row.decode(column: 5, as: Int64.self),
            userID: try row.decode(column: 6, as: String.self),
            topic: topic,
            muted: try row.decode(column: 7, as: Bool.self),
            subscribedAt: try row.decode(column: 8, as: Date.self)
        )
    }

    /// The topic's key and definition, `nil` when there is none; with `locking`, locked against
    /// deletion until the transaction ends.
    static func find(_ id: String, locking: Bool = false, on connection: PostgresConnection) async throws -> (key: Int64, topic: Topic)? {
        let lock: PostgresQuery = locking ? "FOR KEY SHARE" : ""
        guard let row = try await connection.query("SELECT \(columns("t")), t.key FROM topics t WHERE t.id = \(id) \(lock)").first else {
            return nil
        }
        return (try row.decode(column: 5, as: Int64.self), try decode(row))
    }

    /// `find(_:locking:on:)`, locking, that throws `unknownTopic` when there is no such topic.
    static func lock(_ id: String, on connection: PostgresConnection) async throws -> (key: Int64, topic: Topic) {
        guard let found = try await find(id, locking: true, on: connection) else { throw TopicStoreError.unknownTopic }
        return found
    }
}
