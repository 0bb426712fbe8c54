import Foundation
import HeraldCore
import Postgres

/// Copies rendered for their recipient, for notifications whose template reads the user's profile
/// (`renders_per_recipient`): the users are read with their profiles, rendered in Herald, and written
/// in one statement per batch.
extension NotificationStore {
    /// Renders a notification for one recipient, in the variant of their locale (also returned, so
    /// the copy reads that variant's buttons): `nil` leaves the copy on the variant's data (a
    /// rendering over the size limit, which the send could not check for users it had not reached).
    typealias RecipientRenderer = @Sendable (RecipientProfile) -> (rendered: Template.Rendered?, variant: String?)

    /// The renderer of a stored notification: its template version with its shared variables.
    static func recipientRenderer(notification id: Int64, on connection: PostgresConnection) async throws -> RecipientRenderer {
        let row = try await connection.query(
            """
            SELECT t.definition, n.variables FROM notifications n
            JOIN templates t ON t.key = n.template_key AND t.version = n.template_version
            WHERE n.id = \(id)
            """
        )[0]
        let (definition, variablesJSON) = try row.decode((PostgresJSONB, PostgresJSONB).self)
        let template = try JSONDecoder().decode(Template.self, from: Data(definition.utf8))
        let variables = try JSONDecoder().decode([String: JSONValue].self, from: Data(variablesJSON.utf8))
        let parsed = template.parsedStrings()
        let tags = template.variantTags
        return { recipient in
            (
                try? template.renderRecipient(variables: variables, recipient: recipient, parsed: parsed),
                Template.variantTag(for: recipient.locale, among: tags)
            )
        }
    }

    /// The columns `profile` reads, of `users u`: the user's, then their key.
    static let profileColumns: PostgresQuery = "\(UserStore.columns), u.key"

    static func profile(_ row: PostgresRow) throws -> (key: Int64, profile: RecipientProfile) {
        (try row.decode(column: UserStore.columnCount, as: Int64.self), try UserStore.user(row).profile)
    }

    /// `[{key, data, push_title, push_body, variant}]` of each user's rendering, for `jsonb_to_recordset`.
    static func renderedJSON(_ rows: PostgresResult, render: RecipientRenderer) throws -> PostgresJSONB {
        struct Rendered: Encodable {
            var key: Int64
            var data: JSONValue?
            var push_title: String?
            var push_body: String?
            var variant: String?
        }
        let list = try rows.map { row in
            let (key, profile) = try Self.profile(row)
            let (rendered, variant) = render(profile)
            return Rendered(key: key, data: rendered?.data, push_title: rendered?.pushTitle, push_body: rendered?.pushBody, variant: variant)
        }
        return try PostgresJSONB(utf8: Array(JSONEncoder().encode(list)))
    }

    /// Writes the copies of a fan-out batch for `users` (a query of `profileColumns` of the users it
    /// reaches), each rendered for its user. Returns how many it wrote.
    static func insertRenderedCopies(
        notification id: Int64,
        channelKey: Int64,
        xid: Int64,
        users: PostgresQuery,
        skipsExisting: Bool,
        on connection: PostgresConnection
    ) async throws -> Int {
        let rows = try await connection.query(users)
        guard !rows.isEmpty else { return 0 }
        let rendered = try renderedJSON(rows, render: try await recipientRenderer(notification: id, on: connection))
        return try await connection.query(
            """
            INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid, data, push_title, push_body, variant)
            SELECT o.key, \(channelKey), \(id), \(xid), o.data, o.push_title, o.push_body, o.variant
            FROM jsonb_to_recordset(\(rendered)) AS o(key bigint, data jsonb, push_title text, push_body text, variant text)
            \(skipsExisting ? "ON CONFLICT DO NOTHING" : "" as PostgresQuery)
            """
        ).affectedRows
    }

    /// Renders again every live copy of the notification but those of `except` (users whose
    /// rendering the caller made, with their own variables), a page of users at a time, in the
    /// caller's transaction: an edit of a notification whose template reads the recipient's profile.
    static func rerenderCopies(
        notification id: Int64,
        channelKey: Int64,
        except: [String],
        render: RecipientRenderer,
        on connection: PostgresConnection
    ) async throws {
        var after = Int64.min
        while true {
            let rows = try await connection.query(
                """
                SELECT \(profileColumns) FROM notification_recipients r JOIN users u ON u.key = r.user_key
                WHERE r.notification_id = \(id) AND r.channel_key = \(channelKey) AND NOT r.deleted AND r.user_key > \(after)
                    AND u.id <> ALL(\(except))
                ORDER BY r.user_key LIMIT \(Self.rerenderPage)
                """
            )
            guard let last = rows.last else { return }
            let rendered = try renderedJSON(rows, render: render)
            try await connection.query(
                """
                UPDATE notification_recipients r SET data = o.data, push_title = o.push_title, push_body = o.push_body, variant = o.variant
                FROM jsonb_to_recordset(\(rendered)) AS o(key bigint, data jsonb, push_title text, push_body text, variant text)
                WHERE r.user_key = o.key AND r.channel_key = \(channelKey) AND r.notification_id = \(id)
                """
            )
            after = try Self.profile(last).key
            if rows.count < Self.rerenderPage { return }
        }
    }

    /// Users re-rendered per statement when a notification is edited.
    static let rerenderPage = 5_000
}
