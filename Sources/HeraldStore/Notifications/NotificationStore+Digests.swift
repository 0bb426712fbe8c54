import Foundation
import HeraldCore
import Postgres

/// Digests (`sql/0032_digests.sql`): a send with a batch folds into the copy each user already has
/// of an open digest with the same key, instead of giving them a copy of its own.
extension NotificationStore {
    /// Takes the lock that every send, fan-out batch and change of a notification with batch key
    /// `key` in the channel takes, held to the end of the transaction: two sends reaching a user at
    /// once would otherwise each find no digest of theirs and both give the user a copy, and a
    /// deletion would count copies a fold is changing.
    static func lockDigests(channelKey: Int64, key: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            "SELECT pg_advisory_xact_lock(hashtextextended('herald.digest:' || \(channelKey) || ':' || \(key), 0))"
        )
    }

    /// The channel's open digests with `key`: the notifications that opened them, but `except`.
    /// Takes the digests' lock (`lockDigests`) first.
    static func openDigests(channelKey: Int64, key: String, except: Int64? = nil, on connection: PostgresConnection) async throws -> [Int64] {
        try await lockDigests(channelKey: channelKey, key: key, on: connection)
        return try await connection.query(
            """
            SELECT id FROM notifications
            WHERE channel_key = \(channelKey) AND batch_key = \(key) AND batch_closes_at > now() AND deleted_at IS NULL AND id <> \(except ?? 0)
            ORDER BY id
            """
        ).map { try $0.decode(Int64.self) }
    }

    /// SQL true when user key `user` holds a live copy of one of the open digests `digests`. Within a
    /// fan-out batch's key range, the holders are read once (a range of the digests' index, hashed)
    /// rather than probed for each user.
    static func holdsDigest(
        user: PostgresQuery,
        channelKey: Int64,
        digests: [Int64],
        within range: (after: Int64, through: Int64)? = nil
    ) -> PostgresQuery {
        guard !digests.isEmpty else { return "false" }
        guard let range else {
            return """
                EXISTS (SELECT 1 FROM notification_recipients held WHERE held.user_key = \(user) AND held.channel_key = \(channelKey)
                    AND held.notification_id = ANY(\(digests)) AND NOT held.deleted)
                """
        }
        return """
            \(user) IN (SELECT held.user_key FROM notification_recipients held WHERE held.notification_id = ANY(\(digests))
                AND held.user_key > \(range.after) AND held.user_key <= \(range.through) AND held.channel_key = \(channelKey) AND NOT held.deleted)
            """
    }

    /// The users a fold reaches.
    enum DigestReach {
        /// Listed users (a send's targets), by key.
        case keys([Int64])
        /// A fan-out batch: the users `query` selects (a `SELECT` of user keys), all in the batch's
        /// key range, which is spelled out so that copies are read by their index on (notification,
        /// user) rather than every copy of each digest.
        case batch(PostgresQuery, after: Int64, through: Int64)
    }

    /// Folds notification `id` into the open digests `digests` of the users it reaches: each of
    /// those users' copies is rendered again with one more send in its batch and takes this
    /// transaction's position. A copy that was read is unread again: it counts once more, and the
    /// channel's activity moves to now. (One still unread already counts, and leaves the channel's
    /// state alone: a fold of 100,000 users writes their copies, not also their states.) Returns how
    /// many users it folded.
    ///
    /// Set-based: users whose digests hold the same sends (the same digest, count and items — after
    /// the same sends, usually everyone) are one group, rendered once and written in one statement.
    static func fold(
        notification id: Int64,
        into digests: [Int64],
        channelKey: Int64,
        reaching reach: DigestReach,
        xid: Int64,
        on connection: PostgresConnection
    ) async throws -> Int {
        guard !digests.isEmpty else { return 0 }
        // `held`: the copies of the users the fold reaches. `span`: those the groups are read from —
        // the same, or in a fan-out batch every copy in its key range (one index range read; a group
        // none of whose users the send reaches folds nobody).
        let held: PostgresQuery
        let span: PostgresQuery
        switch reach {
        case .keys(let keys):
            guard !keys.isEmpty else { return 0 }
            held = "r.user_key = ANY(\(keys)) AND r.channel_key = \(channelKey) AND NOT r.deleted"
            span = held
        case .batch(let users, let after, let through):
            span = "r.user_key > \(after) AND r.user_key <= \(through) AND r.channel_key = \(channelKey) AND NOT r.deleted"
            held = "\(span) AND r.user_key IN (\(users))"
        }
        let groups = try await connection.query(
            """
            SELECT DISTINCT r.notification_id, coalesce(r.batch_count, 1), coalesce(r.batch_items, ARRAY[r.notification_id])
            FROM notification_recipients r
            WHERE r.notification_id = ANY(\(digests)) AND \(span)
            """
        ).map { row in
            let (digest, count, items) = try row.decode((Int64, Int32, [Int64]).self)
            return (digest: digest, count: Int(count), items: items)
        }
        guard !groups.isEmpty else { return 0 }
        let renderer = try await DigestRenderer.load(notification: id, digests: groups.map(\.digest) + groups.flatMap(\.items), on: connection)
        var folded = 0
        for group in groups {
            let items = Array((group.items + [id]).suffix(renderer.itemLimit))
            let rendered = try renderer.render(digest: group.digest, count: group.count + 1, items: items)
            // A translated template's variant is chosen by each user's locale; otherwise every copy
            // takes the template's own content, and the users need not be read.
            let translated = !renderer.variantTags.isEmpty
            let variant = translated ? TranslationSQL.variant(locale: "u.locale", tags: renderer.variantTags) : "NULL::text"
            let text: PostgresQuery = translated ? "\(rendered) -> coalesce(\(variant), '')" : "\(rendered) -> ''"
            // One statement, so that a copy changed meanwhile (read on a device) is judged as it is
            // when this update locks it. A copy that was read keeps its `read_at` (when it was last
            // read; shown only while it is read) and so says, after the update, that it was: it is
            // unread again and counts once more. An unread copy's `read_at` is cleared.
            let users = try await connection.query(
                """
                WITH folded AS (
                    UPDATE notification_recipients r SET data = \(text) -> 'data', push_title = \(text) ->> 'push_title',
                        push_body = \(text) ->> 'push_body', variant = \(variant), change_xid = \(xid),
                        batch_count = \(Int32(group.count + 1)), batch_items = \(items),
                        status = CASE WHEN r.status = \(CollectionItem.Status.read) THEN \(CollectionItem.Status.delivered) ELSE r.status END,
                        read_at = CASE WHEN r.status = \(CollectionItem.Status.read) THEN coalesce(r.read_at, now()) END, archived = false
                    \(translated ? "FROM users u" : "" as PostgresQuery)
                    WHERE r.notification_id = \(group.digest) AND \(held) AND coalesce(r.batch_count, 1) = \(Int32(group.count))
                        AND coalesce(r.batch_items, ARRAY[r.notification_id]) = \(group.items)
                        \(translated ? "AND u.key = r.user_key" : "" as PostgresQuery)
                    RETURNING r.user_key, r.read_at IS NOT NULL AS was_read
                ), states AS (
                    INSERT INTO channel_states AS s (user_key, channel_key, unread_adjustment, last_activity_at)
                    SELECT user_key, \(channelKey), 1, now() FROM folded WHERE was_read ORDER BY user_key
                    ON CONFLICT (user_key, channel_key) DO UPDATE SET
                        unread_adjustment = s.unread_adjustment + 1, last_activity_at = EXCLUDED.last_activity_at
                )
                SELECT count(*), coalesce(min(f.user_key), 0), coalesce(max(f.user_key), 0),
                    (SELECT coalesce(array_agg(u.id ORDER BY u.key), '{}') FROM (SELECT user_key FROM folded ORDER BY user_key LIMIT \(Self.listedIDLimit)) AS listed
                        JOIN users u ON u.key = listed.user_key)
                FROM folded f
                """
            )
            let (count, low, high, ids) = try users[0].decode((Int64, Int64, Int64, [String]).self)
            guard count > 0 else { continue }
            folded += Int(count)
            try await PushStore.enqueue(
                notification: group.digest,
                channelKey: channelKey,
                change: .updated,
                usersAfter: low - 1,
                through: high,
                sparse: true,
                on: connection
            )
            try await connection.query(
                """
                SELECT herald_webhook_event('notification.digest_updated', jsonb_build_object('notification_id', \(group.digest)::text,
                    'channel_url', \(renderer.channelURL), 'batch_key', \(renderer.batchKey), 'count', \(Int64(group.count + 1)), 'folded_notification_id', \(id)::text,
                    'users', \(count), 'user_ids', \(ids), 'at', \(TimeSQL.rfc3339("now()"))))
                WHERE herald_webhook_wanted('notification.digest_updated')
                """
            )
        }
        try await connection.query("UPDATE notifications SET batch_folded = batch_folded + \(Int64(folded)) WHERE id = \(id)")
        return folded
    }

    /// Queues the alert of every digest whose alert goes at the end of its window and whose window
    /// has closed by `now` (its fan-out done): its recipients' devices get an alert with the digest as
    /// it reads then. A send that opened no digest (it folded into everyone's) has none to give.
    /// Returns how many digests it queued.
    public func queueDigestAlerts(now: Date) async throws -> Int {
        Int(
            clamping: try await client.query(
                """
                WITH due AS (
                    UPDATE notifications SET batch_alert_at = NULL
                    WHERE batch_alert_at <= \(PostgresTimestamp(now)) AND fanout_state = 'done'
                    RETURNING id, recipient_count, deleted_at
                ), queued AS (
                    INSERT INTO alert_outbox (notification_id) SELECT id FROM due WHERE recipient_count > 0 AND deleted_at IS NULL
                    RETURNING 1
                )
                SELECT (SELECT count(*) FROM queued), CASE WHEN (SELECT count(*) FROM queued) > 0 THEN pg_notify(\(PushStore.wakeChannel), '') END::text
                """
            )[0].decode(column: 0, as: Int64.self)
        )
    }

    /// When the next digest alert is due, if one is waiting.
    public func nextDigestAlert() async throws -> Date? {
        // A digest whose fan-out is still running is not due yet, whatever its time says.
        try await client.query(
            "SELECT min(batch_alert_at) FROM notifications WHERE batch_alert_at IS NOT NULL AND fanout_state = 'done'"
        )[0].decode(Date?.self)
    }
}

/// Renders a digest again with one more send in its batch: the folding send's template version and
/// variables, the first send's variables and the latest items', read once for all groups; with
/// the channel and key its webhook events name.
struct DigestRenderer {
    let channelURL: String
    let batchKey: String
    let template: Template
    let variables: [String: JSONValue]
    let sends: [Int64: [String: JSONValue]]
    let itemLimit: Int

    var variantTags: [String] { template.variantTags }

    static func load(notification id: Int64, digests: [Int64], on connection: PostgresConnection) async throws -> DigestRenderer {
        let row = try await connection.query(
            """
            SELECT t.definition, n.variables, n.batch, c.url, n.batch_key FROM notifications n
            JOIN templates t ON t.key = n.template_key AND t.version = n.template_version
            JOIN channels c ON c.key = n.channel_key
            WHERE n.id = \(id)
            """
        )[0]
        let (definition, variablesJSON, batchJSON, channelURL, batchKey) = try row.decode(
            (PostgresJSONB, PostgresJSONB, PostgresJSONB, String, String).self
        )
        let decoder = JSONDecoder()
        let template = try decoder.decode(Template.self, from: Data(definition.utf8))
        let batch = try decoder.decode(Batch.self, from: Data(batchJSON.utf8))
        var sends: [Int64: [String: JSONValue]] = [:]
        for row in try await connection.query("SELECT id, variables FROM notifications WHERE id = ANY(\(Array(Set(digests))))") {
            let (send, json) = try row.decode((Int64, PostgresJSONB).self)
            sends[send] = try decoder.decode([String: JSONValue].self, from: Data(json.utf8))
        }
        let variables = try decoder.decode([String: JSONValue].self, from: Data(variablesJSON.utf8))
        sends[id] = variables
        return DigestRenderer(
            channelURL: channelURL,
            batchKey: batchKey,
            template: template,
            variables: variables,
            sends: sends,
            itemLimit: batch.items
        )
    }

    /// `{"": {data, push_title, push_body}, "<tag>": …}`: the digest in the template's own content
    /// and in each variant. A batch whose items make the data too large lists the latest only; one
    /// still too large is the latest send as it rendered on its own.
    func render(digest: Int64, count: Int, items: [Int64]) throws -> PostgresJSONB {
        func context(_ items: [Int64]) -> BatchContext {
            BatchContext(count: count, first: sends[digest] ?? [:], latest: variables, items: items.map { sends[$0] ?? [:] })
        }
        func rendering(_ items: [Int64]) -> Result<RenderedNotification, NotificationRenderProblem> {
            Result { () throws(NotificationRenderProblem) in
                try template.renderNotification(variables: variables, userVariables: [:], batch: context(items))
            }
        }
        var result = rendering(items)
        if case .failure(let problem) = result, problem.kind == .tooLarge, items.count > 1 { result = rendering(Array(items.suffix(1))) }
        // Still too large (the first send's variables, of another template version, can make it so):
        // the latest send as it rendered on its own, which its send checked.
        if case .failure = result {
            result = Result { () throws(NotificationRenderProblem) in
                try template.renderNotification(variables: variables, userVariables: [:])
            }
        }
        let rendered = try result.get()
        struct Text: Encodable {
            var data: JSONValue
            var push_title: String?
            var push_body: String?
        }
        var all = ["": Text(data: rendered.shared.data, push_title: rendered.shared.pushTitle, push_body: rendered.shared.pushBody)]
        for (tag, variant) in rendered.variants {
            all[tag] = Text(data: variant.data, push_title: variant.pushTitle, push_body: variant.pushBody)
        }
        return try PostgresJSONB(utf8: Array(JSONEncoder().encode(all)))
    }
}
