import Foundation
import HeraldCore
import Postgres

/// Notifications: sending (one notification row plus one row per recipient, inserted as a set),
/// reading with counts, re-rendering and deleting for every recipient.
public struct NotificationStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// At most this many offending ids are listed in an error.
    public static let listedIDLimit = 100

    /// The answer to a send.
    public enum SendOutcome: Sendable {
        /// Stored now; `response` is what `respond` made of it (and what a retry will get). `dropped`
        /// counts the users a throttle that drops left without a copy at the send (a broadcast's
        /// fan-out reports its own, batch by batch).
        case created(StoredNotification, response: StoredResponse, dropped: Int)
        /// The idempotency key was used before with the same request: the first response.
        case replayed(StoredResponse)
        /// The idempotency key was used before with a different request.
        case keyReused
    }

    /// Stores the notification and its recipients in one transaction.
    ///
    /// With an idempotency key, the key is claimed first: a concurrent send with the same key waits
    /// for this transaction and then finds the key taken, so exactly one of them creates anything.
    /// `respond` builds the response inside the transaction, so the response kept for retries is
    /// committed together with the notification. A `fence` is a query run first in the transaction
    /// that must answer a row (and may lock it): without one, nothing is sent (`fenceLost`).
    public func send(
        _ draft: NotificationDraft,
        idempotency: IdempotencyKey?,
        fence: PostgresQuery? = nil,
        respond: @escaping @Sendable (StoredNotification) throws -> StoredResponse
    ) async throws -> SendOutcome {
        try await client.withRetryingTransaction { connection in
            if let idempotency, let previous = try await Self.claim(idempotency, on: connection) {
                return previous
            }
            if let fence, try await connection.query(fence).isEmpty { throw NotificationStoreError.fenceLost }
            let (notification, dropped) = try await Self.insert(draft, on: connection)
            let response = try respond(notification)
            if let idempotency { try await Self.keep(response, for: idempotency, userIDs: draft.namedUserIDs, on: connection) }
            return .created(notification, response: response, dropped: dropped)
        }
    }

    /// Writes the notification and the copies the send gives; returns it as stored, and how many users
    /// a throttle that drops left without a copy.
    static func insert(_ draft: NotificationDraft, on connection: PostgresConnection) async throws -> (StoredNotification, dropped: Int) {
        // FOR KEY SHARE keeps the channel from being deleted until this transaction ends.
        guard
            let channelRow = try await connection.query(
                "SELECT key, categories FROM channels WHERE url = \(draft.channelURL) FOR KEY SHARE"
            ).first
        else {
            throw NotificationStoreError.unknownChannel
        }
        let (channelKey, categoriesJSON) = try channelRow.decode((Int64, PostgresJSONB).self)
        // The category's defaults as the send finds them; every batch and alert applies these.
        let category = try JSONDecoder().decode([Channel.Category].self, from: Data(categoriesJSON.utf8)).first { $0.id == draft.category }
        let (inboxDefault, pushDefault) = (category?.inboxDefault ?? true, category?.pushDefault ?? true)
        let inbox = CategoryPreferenceSQL.inboxAdmits(
            user: "u.key",
            channel: "\(channelKey)",
            category: "\(draft.category)",
            inboxDefault: inboxDefault
        )
        let overrides = try Self.overridesJSON(draft.content.perUser)
        var targetIDs: [String] = []
        let audienceSize: Int64
        var fanoutThrough: Int64 = 0
        var topicKey: Int64?
        // Excluded ids that name no user are nobody to leave out.
        let excludedKeys =
            draft.excluded.isEmpty
            ? []
            : try await connection.query("SELECT key FROM users WHERE id = ANY(\(draft.excluded)) ORDER BY key").map { try $0.decode(Int64.self) }
        // A part of a send scheduled for a local time reaches the users of its time zones only.
        let inZones: PostgresQuery = draft.timeZones.map { "u.time_zone = ANY(\($0))" } ?? "true"
        switch draft.audience {
        case .targets(let ids):
            try await Self.requireUsers(ids, on: connection)
            targetIDs = ids
            if draft.timeZones != nil {
                targetIDs = try await connection.query("SELECT u.id FROM users u WHERE u.id = ANY(\(ids)) AND \(inZones)").map {
                    try $0.decode(String.self)
                }
            }
            audienceSize = Int64(targetIDs.count)
        case .all:
            try await Self.requireUsers(draft.content.perUser.keys.sorted(), on: connection)
            let row = try await connection.query(
                draft.timeZones == nil
                    ? "SELECT coalesce(max(key), 0), count(*) - cardinality(\(excludedKeys)::int8[]) FROM users"
                    : "SELECT coalesce(max(key), 0), count(*) FILTER (WHERE \(inZones) AND u.key <> ALL(\(excludedKeys)::int8[])) FROM users u"
            ).first!
            (fanoutThrough, audienceSize) = try row.decode((Int64, Int64).self)
        case .topic(let topic):
            try await Self.requireUsers(draft.content.perUser.keys.sorted(), on: connection)
            // Locked: the topic (and so its key) is not deleted until this commits.
            guard let key = try await TopicStore.find(topic, locking: true, on: connection)?.key else {
                throw NotificationStoreError.unknownTopic
            }
            topicKey = key
            // The subscribers now, by the primary key; the fan-out reaches them as it then finds them.
            let row = try await connection.query(
                """
                SELECT coalesce(max(s.user_key), 0), count(*) FILTER (WHERE NOT s.muted AND s.user_key <> ALL(\(excludedKeys)::int8[]) AND \(inZones))
                FROM topic_subscriptions s JOIN users u ON u.key = s.user_key WHERE s.topic_key = \(key)
                """
            ).first!
            (fanoutThrough, audienceSize) = try row.decode((Int64, Int64).self)
        }
        let xid = try await Self.currentTransactionID(on: connection)
        let variables = try PostgresJSONB(utf8: Array(JSONEncoder().encode(draft.variables)))
        let data = try PostgresJSONB(utf8: Array(JSONEncoder().encode(draft.content.shared.data)))
        let push = try PostgresJSONB(utf8: Array(JSONEncoder().encode(draft.push)))
        let actions = try PostgresJSONB(utf8: Array(JSONEncoder().encode(draft.content.shared.actions)))
        let variants = try TranslationSQL.variantsJSON(draft.content.variants)
        let variant = TranslationSQL.variant(locale: "u.locale", tags: draft.content.variants.keys.sorted())
        let deadline = draft.eventDeadline.map(PostgresTimestamp.init)
        let fanoutState = fanoutThrough > 0 ? "running" : "done"
        // A batched send: the digests it folds into (its own opens with it, for the window).
        var digests: [Int64] = []
        if let batch = draft.batch { digests = try await Self.openDigests(channelKey: channelKey, key: batch.key, on: connection) }
        let batchJSON = try draft.batch.map { try PostgresJSONB(utf8: Array(JSONEncoder().encode($0))) }
        let window = draft.batch?.windowSeconds ?? 0
        let alertsAtEnd = draft.batch?.alert == .last && draft.push.alert
        let inserted = try await connection.query(
            """
            INSERT INTO notifications (
                channel_key, template_key, template_version, variables, data, push_title, push_body,
                category, tags, event_deadline, push, audience, audience_size, fanout_through, fanout_state,
                fanout_skips_existing, expires_at, topic_key, topic, excluded_keys, inbox_default, push_default,
                renders_per_recipient, actions, variants, time_zones, throttle, batch, batch_key, batch_closes_at, batch_alert_at)
            VALUES (
                \(channelKey), \(draft.templateKey), \(draft.templateVersion), \(variables), \(data),
                \(draft.content.shared.pushTitle), \(draft.content.shared.pushBody), \(draft.category), \(draft.tags),
                \(deadline), \(push), \(draft.audience.name), \(audienceSize), \(fanoutThrough), \(fanoutState),
                \(!draft.content.perUser.isEmpty), \(draft.expiresAt.map(PostgresTimestamp.init)), \(topicKey), \(topicName(draft.audience)),
                \(excludedKeys), \(inboxDefault), \(pushDefault), \(draft.rendersPerRecipient), \(actions), \(variants), \(draft.timeZones),
                \(try ThrottleSQL.json(draft.throttle)), \(batchJSON), \(draft.batch?.key),
                CASE WHEN \(draft.batch != nil) THEN now() + \(window) * interval '1 second' END,
                CASE WHEN \(alertsAtEnd) THEN now() + \(window) * interval '1 second' END)
            RETURNING id
            """
        )
        let id = try inserted[0].decode(Int64.self)
        let admits = try await Self.throttleAdmits(
            draft.throttle,
            user: "u.key",
            notification: id,
            channelKey: channelKey,
            category: draft.category,
            on: connection
        )
        // One statement for every recipient. The per-user overrides ride along as one JSON array
        // joined in by id; everyone else gets NULL ("the notification's own data").
        let recipients: PostgresResult
        let dropped: Int
        switch draft.audience {
        case .targets:
            // Users with an open digest of the batch get it changed instead of a copy of this one.
            let reached: PostgresQuery = "FROM users u WHERE u.id = ANY(\(targetIDs)) AND \(inbox)"
            var folded = 0
            if !digests.isEmpty {
                let keys = try await connection.query("SELECT u.key \(reached) ORDER BY u.key").map { try $0.decode(Int64.self) }
                folded = try await Self.fold(notification: id, into: digests, channelKey: channelKey, reaching: .keys(keys), xid: xid, on: connection)
            }
            let fresh: PostgresQuery = folded > 0 ? "AND NOT \(Self.holdsDigest(user: "u.key", channelKey: channelKey, digests: digests))" : ""
            dropped = try await Self.recordDropped(
                draft.throttle,
                admits: admits,
                users: "\(reached) \(fresh)",
                user: "u.key",
                notification: id,
                channelKey: channelKey,
                on: connection
            )
            recipients = try await connection.query(
                """
                INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid, data, push_title, push_body, variant)
                SELECT u.key, \(channelKey), \(id), \(xid), o.data, o.push_title, o.push_body, \(variant)
                FROM users u
                LEFT JOIN jsonb_to_recordset(\(overrides)) AS o(id text, data jsonb, push_title text, push_body text) ON o.id = u.id
                WHERE u.id = ANY(\(targetIDs)) AND \(inbox) AND \(admits) \(fresh)
                """
            )
        case .all, .topic:
            // Users with per-user variables get their copy now (if the send reaches them: not
            // excluded, and for a topic subscribed and not muting it); the batches skip them.
            let subscribed: PostgresQuery =
                topicKey.map {
                    "EXISTS (SELECT 1 FROM topic_subscriptions s WHERE s.topic_key = \($0) AND s.user_key = u.key AND NOT s.muted)"
                } ?? "true"
            dropped = try await Self.recordDropped(
                draft.throttle,
                admits: admits,
                users: """
                    FROM jsonb_to_recordset(\(overrides)) AS o(id text) JOIN users u ON u.id = o.id
                    WHERE u.key <> ALL(\(excludedKeys)::int8[]) AND \(subscribed) AND \(inbox) AND \(inZones)
                    """,
                user: "u.key",
                notification: id,
                channelKey: channelKey,
                on: connection
            )
            recipients = try await connection.query(
                """
                INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid, data, push_title, push_body, variant)
                SELECT u.key, \(channelKey), \(id), \(xid), o.data, o.push_title, o.push_body, \(variant)
                FROM jsonb_to_recordset(\(overrides)) AS o(id text, data jsonb, push_title text, push_body text)
                JOIN users u ON u.id = o.id
                WHERE u.key <> ALL(\(excludedKeys)::int8[]) AND \(subscribed) AND \(inbox) AND \(inZones) AND \(admits)
                """
            )
        }
        try await Self.countUnread(notification: id, channelKey: channelKey, on: connection)
        if recipients.affectedRows > 0 { try await PushStore.enqueue(notification: id, channelKey: channelKey, change: .created, on: connection) }
        try await connection.query(
            "UPDATE notifications SET recipient_count = \(Int64(recipients.affectedRows)) WHERE id = \(id)"
        )
        return (try await Self.fetch(id, on: connection)!, dropped)
    }

    static func topicName(_ audience: Audience) -> String? {
        if case .topic(let id) = audience { return id }
        return nil
    }

    /// Counts a new notification as unread for every recipient who has a copy at send time — every
    /// target, or a broadcast's users with per-user variables — in their channel states (created on
    /// first use), and makes it their channel's latest activity. (Broadcast copies made later by the
    /// fan-out are counted per channel instead: see `sql/0006_collections.sql`.) States are locked in
    /// user order, the order every writer uses.
    static func countUnread(notification id: Int64, channelKey: Int64, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO channel_states AS s (user_key, channel_key, unread_adjustment, last_notification_id, last_activity_at)
            SELECT user_key, channel_key, 1, notification_id, now() FROM notification_recipients
            WHERE notification_id = \(id) ORDER BY user_key
            ON CONFLICT (user_key, channel_key) DO UPDATE SET
                unread_adjustment = s.unread_adjustment + 1,
                last_notification_id = greatest(s.last_notification_id, EXCLUDED.last_notification_id),
                last_activity_at = EXCLUDED.last_activity_at
            """
        )
    }

    /// Throws `unknownUsers` unless every user the send names exists, or `unknownTopic` unless the
    /// topic it goes to does: what its send will check, checked ahead (a send scheduled for later).
    public func checkAudience(of draft: NotificationDraft) async throws {
        try await client.withConnection { connection in
            try await Self.requireUsers(draft.namedUserIDs, on: connection)
            if case .topic(let topic) = draft.audience, try await TopicStore.find(topic, on: connection) == nil {
                throw NotificationStoreError.unknownTopic
            }
        }
    }

    /// Throws `unknownUsers` unless every id names a user.
    static func requireUsers(_ ids: [String], on connection: PostgresConnection) async throws {
        if let (listed, total) = try await UserStore.unknown(ids, on: connection) {
            throw NotificationStoreError.unknownUsers(listed, total: total)
        }
    }

    /// This transaction's id as a change position (see `sql/0005_notifications.sql`). Assigns the id
    /// if the transaction has none yet.
    static func currentTransactionID(on connection: PostgresConnection) async throws -> Int64 {
        // A SELECT of one expression always answers one row.
        try await connection.query("SELECT \(ChangePositionSQL.currentTransactionID)")[0].decode(Int64.self)
    }

    static func overridesJSON(_ perUser: [String: Template.Rendered]) throws -> PostgresJSONB {
        struct Override: Encodable {
            var id: String
            var data: JSONValue
            var push_title: String?
            var push_body: String?
        }
        let list = perUser.map { Override(id: $0.key, data: $0.value.data, push_title: $0.value.pushTitle, push_body: $0.value.pushBody) }
        return try PostgresJSONB(utf8: Array(JSONEncoder().encode(list)))
    }

    // MARK: - Reading

    /// The notification, unless it does not exist or was deleted.
    public func get(_ id: Int64) async throws -> StoredNotification? {
        try await client.withConnection { connection in
            try await Self.fetch(id, on: connection)
        }
    }

    /// Recipients by status, deleted copies excluded.
    ///
    /// Counted when an admin asks, not kept as counters: a counter on the notification would be one
    /// row every recipient's read or receipt must lock, and a broadcast has 100,000 of them.
    public func counts(_ id: Int64) async throws -> RecipientCounts {
        let row = try await client.query(
            """
            SELECT count(*) FILTER (WHERE status = \(CollectionItem.Status.sent)), count(*) FILTER (WHERE status = \(CollectionItem.Status.delivered)),
                count(*) FILTER (WHERE status = \(CollectionItem.Status.read)),
                (SELECT count(*) FROM notification_events WHERE notification_id = \(id) AND kind = 1),
                (SELECT count(*) FROM notification_events WHERE notification_id = \(id) AND kind = 2),
                (SELECT count(*) FROM notification_events WHERE notification_id = \(id) AND kind = \(NotificationEventKind.acted.rawValue)),
                (SELECT count(*) FROM notification_events WHERE notification_id = \(id) AND kind = \(NotificationEventKind.throttled.rawValue)),
                (SELECT coalesce(jsonb_object_agg(a, n), '{}')::text FROM (
                    SELECT a, count(*) AS n FROM notification_recipients, unnest(actions_done) AS a
                    WHERE notification_id = \(id) AND actions_done IS NOT NULL GROUP BY a) AS per_action)
            FROM notification_recipients WHERE notification_id = \(id) AND NOT deleted
            """
        ).first!
        let (sent, delivered, read, viewed, clicked, acted, throttled, perAction) =
            try row.decode((Int64, Int64, Int64, Int64, Int64, Int64, Int64, String).self)
        return RecipientCounts(
            sent: sent,
            delivered: delivered,
            read: read,
            viewed: viewed,
            clicked: clicked,
            acted: acted,
            throttled: throttled,
            actions: try JSONDecoder().decode([String: Int64].self, from: Data(perAction.utf8))
        )
    }

    /// The notification's recipients in user-key order, `limit` after the user key `after`: each one's
    /// status with delivery and read times.
    public func members(_ id: Int64, after: Int64?, limit: Int) async throws -> [RecipientStatus] {
        try await client.query(
            """
            SELECT r.user_key, u.id, r.status, r.delivered_at, \(unescaped: Self.readAt), r.deleted
            FROM notification_recipients r JOIN users u ON u.key = r.user_key
            WHERE r.notification_id = \(id) AND r.user_key > \(after ?? 0)
            ORDER BY r.user_key LIMIT \(limit)
            """
        ).map { row in
            let (key, userID, status, deliveredAt, readAt, deleted) = try row.decode((Int64, String, Int16, Date?, Date?, Bool).self)
            return RecipientStatus(
                userKey: key,
                userID: userID,
                status: CollectionItem.Status(rawValue: status) ?? .sent,
                deliveredAt: deliveredAt,
                readAt: readAt,
                deleted: deleted
            )
        }
    }

    /// When copy `r` was read, while it is: a digest folded into after it was read is unread again
    /// but keeps the time (see `fold`).
    static let readAt = "CASE WHEN r.status = \(CollectionItem.Status.read.rawValue) THEN r.read_at END"

    static func fetch(_ id: Int64, on connection: PostgresConnection) async throws -> StoredNotification? {
        try await connection.query(
            "SELECT \(columns) FROM notifications n JOIN channels c ON c.key = n.channel_key WHERE n.id = \(id) AND n.deleted_at IS NULL"
        ).first.map(decode)
    }

    static let columns: PostgresQuery = """
        n.id, c.url, n.template_key, n.template_version, n.variables, n.data, n.push_title, n.push_body, \
        n.category, n.tags, n.event_deadline, n.push, n.audience, n.audience_size, n.recipient_count, \
        n.fanout_state, n.created_at, n.updated_at, n.pushes_sent, \
        least(n.expires_at, n.created_at + c.retention_seconds * interval '1 second'), n.topic, n.variants, n.throttle, \
        n.batch, n.batch_folded
        """

    static func decode(_ row: PostgresRow) throws -> StoredNotification {
        let (id, channelURL, templateKey, templateVersion, variables, data, pushTitle, pushBody, category, tags) =
            try row.decode((Int64, String, String, Int, PostgresJSONB, PostgresJSONB, String?, String?, String, [String]).self)
        let deadline = try row.decode(column: 10, as: Date?.self)
        let push = try row.decode(column: 11, as: PostgresJSONB.self)
        let audience = try row.decode(column: 12, as: String.self)
        let audienceSize = try row.decode(column: 13, as: Int64.self)
        let recipientCount = try row.decode(column: 14, as: Int64.self)
        let fanoutState = try row.decode(column: 15, as: String.self)
        let createdAt = try row.decode(column: 16, as: Date.self)
        let updatedAt = try row.decode(column: 17, as: Date.self)
        let pushesSent = try row.decode(column: 18, as: Int64.self)
        let expiresAt = try row.decode(column: 19, as: Date?.self)
        let topic = try row.decode(column: 20, as: String?.self)
        let variants = try row.decode(column: 21, as: PostgresJSONB.self)
        let throttle = try ThrottleSQL.decode(try row.decode(column: 22, as: PostgresJSONB?.self))
        let batch = try row.decode(column: 23, as: PostgresJSONB?.self)
        let decoder = JSONDecoder()
        return StoredNotification(
            id: id,
            channelURL: channelURL,
            templateKey: templateKey,
            templateVersion: templateVersion,
            variables: try decoder.decode([String: JSONValue].self, from: Data(variables.utf8)),
            data: try decoder.decode(JSONValue.self, from: Data(data.utf8)),
            pushTitle: pushTitle,
            pushBody: pushBody,
            category: category,
            tags: tags,
            eventDeadline: deadline,
            push: try decoder.decode(PushOptions.self, from: Data(push.utf8)),
            audience: audience,
            topic: topic,
            audienceSize: audienceSize,
            recipientCount: recipientCount,
            fanoutState: StoredNotification.FanoutState(rawValue: fanoutState) ?? .done,
            expiresAt: expiresAt,
            createdAt: createdAt,
            updatedAt: updatedAt,
            pushesSent: pushesSent,
            variants: try decoder.decode([String: JSONValue].self, from: Data(variants.utf8)),
            throttle: throttle,
            batch: try batch.map { try decoder.decode(Batch.self, from: Data($0.utf8)) },
            batchFolded: try row.decode(column: 24, as: Int64.self)
        )
    }
}
