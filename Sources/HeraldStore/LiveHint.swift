import Postgres

/// What a committed change tells every Herald process, as the payload of `NOTIFY herald_live`: its
/// live hub (which reads the change itself from the database for the sockets it holds) and its change
/// notifier (which stops answering the users it names from memory). Only a hint: it names what
/// changed and whom it concerns, never the new state. Sent by the transaction that makes the change,
/// so it arrives after the commit (never for a rollback) and in commit order, carrying that
/// transaction's id (see `Received`).
///
/// The text form is small and fixed (`NOTIFY` payloads are limited to 8,000 bytes): fields separated
/// by spaces, the first one naming the kind, and last `@` and the sending transaction's id.
public enum LiveHint: Sendable, Equatable {
    /// A notification changed for its recipients — those the scope names.
    case notification(NotificationChange, id: Int64, channelKey: Int64, recipients: Recipients)
    /// The user's channel state (last read / last seen, unread count) changed.
    case channelState(userKey: Int64, channelKey: Int64)
    /// The user's copies became delivered.
    case delivered(userKey: Int64, channelKey: Int64, notificationIDs: [Int64])
    /// The user's sessions were revoked: sockets whose session is gone must close.
    case sessionsRevoked(userKey: Int64)
    /// The channel's definition changed (name, cover, custom type, categories): the users who list it
    /// see a changed entry.
    case channelChanged(channelKey: Int64)
    /// The channel was deleted by transaction `xid`: it left the list of every user its removals name
    /// (`channel_list_removals` rows with that `change_xid`). The URL travels in the hint because the
    /// channel's row is gone.
    case channelDeleted(url: String, xid: Int64)
    /// These users' devices changed — one was removed, or a refresh push to one was recorded as
    /// delivered — so whether a sync naming a device must write its push state is open again.
    case devicesChanged(userKeys: [Int64])
    /// A process's own round trip through `NOTIFY`, by which it knows its listener hears everything
    /// up to now (see `ChangeNotifier`).
    case ping(node: Int64, sequence: Int64)

    public enum NotificationChange: String, Sendable {
        case created, updated, deleted
    }

    /// Whom a notification's change concerns: a superset of its recipients.
    public enum Recipients: Sendable, Equatable {
        /// Users with keys in `(after, through]` (a broadcast's fan-out batch, or the span of a send's
        /// recipients when there are too many to list).
        case range(after: Int64, through: Int64)
        /// These users.
        case users([Int64])

        public func contains(_ userKey: Int64) -> Bool {
            switch self {
            case .range(let after, let through): return userKey > after && userKey <= through
            case .users(let keys): return keys.contains(userKey)
            }
        }
    }

    /// A hint as heard, with the id of the transaction that sent it.
    public struct Received: Sendable, Equatable {
        public var hint: LiveHint
        /// The sending transaction's id: every change the hint names has this position or is older.
        public var transactionID: Int64

        public init(hint: LiveHint, transactionID: Int64) {
            self.hint = hint
            self.transactionID = transactionID
        }

        /// Parses a payload; `nil` for anything malformed (it is then ignored).
        public init?(payload: String) {
            guard let at = payload.lastIndex(of: "@"), let xid = Int64(payload[payload.index(after: at)...]),
                at > payload.startIndex, payload[payload.index(before: at)] == " ",
                let hint = LiveHint(fields: payload[..<payload.index(before: at)])
            else { return nil }
            self.init(hint: hint, transactionID: xid)
        }
    }

    /// The `LISTEN`/`NOTIFY` channel.
    public static let channel = "herald_live"

    /// Hints name at most this many ids or users, which keeps the payload far below the limit.
    public static let maximumIDs = 100

    /// The hint's fields, without the transaction id (which the database adds when it sends it).
    public var payload: String {
        switch self {
        case .notification(let change, let id, let channelKey, let recipients):
            return "n \(change.rawValue) \(id) \(channelKey) " + Self.fields(recipients)
        case .channelState(let userKey, let channelKey):
            return "s \(userKey) \(channelKey)"
        case .delivered(let userKey, let channelKey, let ids):
            return "d \(userKey) \(channelKey) " + Self.list(ids)
        case .sessionsRevoked(let userKey):
            return "r \(userKey)"
        case .channelChanged(let channelKey):
            return "c \(channelKey)"
        case .channelDeleted(let url, let xid):
            // A channel URL has no spaces (`Channel.urlProblem`), so it can be the last field.
            return "x \(xid) \(url)"
        case .devicesChanged(let userKeys):
            return "v " + Self.list(userKeys)
        case .ping(let node, let sequence):
            return "p \(node) \(sequence)"
        }
    }

    private static func fields(_ recipients: Recipients) -> String {
        switch recipients {
        case .range(let after, let through): return "\(after) \(through)"
        case .users(let keys): return "u " + list(keys)
        }
    }

    private static func list(_ numbers: [Int64]) -> String {
        numbers.map(String.init).joined(separator: ",")
    }

    private static func numbers(_ text: Substring) -> [Int64]? {
        let numbers = text.split(separator: ",").map { Int64($0) }
        guard !numbers.isEmpty, !numbers.contains(nil) else { return nil }
        return numbers.compactMap { $0 }
    }

    /// Parses the fields of a payload (without its transaction id); `nil` for anything malformed.
    init?(fields text: Substring) {
        let fields = text.split(separator: " ")
        guard let kind = fields.first else { return nil }
        let numbers = fields.dropFirst().map { Int64($0) }
        switch kind {
        case "n" where fields.count == 6:
            guard let change = NotificationChange(rawValue: String(fields[1])),
                let id = Int64(fields[2]), let channelKey = Int64(fields[3])
            else { return nil }
            let recipients: Recipients
            if fields[4] == "u" {
                guard let keys = Self.numbers(fields[5]) else { return nil }
                recipients = .users(keys)
            } else {
                guard let after = Int64(fields[4]), let through = Int64(fields[5]) else { return nil }
                recipients = .range(after: after, through: through)
            }
            self = .notification(change, id: id, channelKey: channelKey, recipients: recipients)
        case "s" where fields.count == 3:
            guard let user = numbers[0], let channel = numbers[1] else { return nil }
            self = .channelState(userKey: user, channelKey: channel)
        case "d" where fields.count == 4:
            guard let user = numbers[0], let channel = numbers[1], let ids = Self.numbers(fields[3]) else { return nil }
            self = .delivered(userKey: user, channelKey: channel, notificationIDs: ids)
        case "r" where fields.count == 2:
            guard let user = numbers[0] else { return nil }
            self = .sessionsRevoked(userKey: user)
        case "c" where fields.count == 2:
            guard let channel = numbers[0] else { return nil }
            self = .channelChanged(channelKey: channel)
        case "x" where fields.count == 3:
            guard let xid = numbers[0] else { return nil }
            self = .channelDeleted(url: String(fields[2]), xid: xid)
        case "v" where fields.count == 2:
            guard let users = Self.numbers(fields[1]) else { return nil }
            self = .devicesChanged(userKeys: users)
        case "p" where fields.count == 3:
            guard let node = numbers[0], let sequence = numbers[1] else { return nil }
            self = .ping(node: node, sequence: sequence)
        default:
            return nil
        }
    }

    // MARK: - Sending

    /// The SQL expression of a payload: `fields` (a text expression), then the sending transaction's id.
    static func payloadSQL(_ fields: String) -> String {
        "\(fields) || ' @' || \(ChangePositionSQL.currentTransactionID.sql)"
    }

    /// Sends the hint from the caller's transaction (delivered at its commit).
    func send(on connection: PostgresConnection) async throws {
        try await connection.query(query)
    }

    /// The statement that sends the hint, for a transaction sent in one piece (or alone).
    public var query: PostgresQuery {
        "SELECT pg_notify(\(Self.channel), \(payload) || ' @' || \(ChangePositionSQL.currentTransactionID))"
    }

    /// The statement that sends the hint only when `condition` holds (evaluated in the same transaction).
    func query(when condition: PostgresQuery) -> PostgresQuery {
        "\(query) WHERE \(condition)"
    }

    /// The statement that sends a notification's hint, its recipients read from its copies in the
    /// sending transaction: listed when there are at most `maximumIDs`, else their span.
    static func notificationQuery(_ change: NotificationChange, id: Int64, channelKey: Int64) -> PostgresQuery {
        "SELECT pg_notify(\(channel), \(notificationPayload(change, id: id, channelKey: channelKey)))"
    }

    /// The payload expression of `notificationQuery`; with `within`, only the copies of users with
    /// keys in `(after, through]` (a topic's fan-out batch, whose range holds users who are not
    /// subscribers and must not be woken).
    static func notificationPayload(
        _ change: NotificationChange,
        id: Int64,
        channelKey: Int64,
        within range: (after: Int64, through: Int64)? = nil
    ) -> PostgresQuery {
        let head = "n \(change.rawValue) \(id) \(channelKey) "
        let bounds: PostgresQuery = range.map { "AND user_key > \($0.after) AND user_key <= \($0.through)" } ?? ""
        return """
            (SELECT \(head) || CASE WHEN count(*) = 0 THEN '0 0'
                WHEN count(*) <= \(maximumIDs) THEN 'u ' || string_agg(user_key::text, ',')
                ELSE (min(user_key) - 1)::text || ' ' || max(user_key)::text END
                || ' @' || \(ChangePositionSQL.currentTransactionID)
            FROM notification_recipients WHERE notification_id = \(id) \(bounds))
            """
    }

    /// An SQL query that sends `delivered` hints for the rows of `source` (what follows `FROM`: a
    /// relation with columns `user_key`, `channel_key`, `notification_id`, and optionally a `WHERE`),
    /// one per user and channel and at most `maximumIDs` ids each, with the payloads `payload` writes;
    /// it returns one row per hint. For statements that find out themselves what they changed, so
    /// that the hint goes in the same statement.
    static func deliveredHintsSQL(from source: String) -> String {
        """
        SELECT pg_notify('\(channel)', \(payloadSQL("'d ' || user_key || ' ' || channel_key || ' ' || string_agg(notification_id::text, ',' ORDER BY notification_id)")))
        FROM (
            SELECT user_key, channel_key, notification_id,
                (row_number() OVER (PARTITION BY user_key, channel_key ORDER BY notification_id) - 1) / \(maximumIDs) AS part
            FROM \(source)
        ) AS numbered
        GROUP BY user_key, channel_key, part
        """
    }

    /// The statement that sends `devicesChanged` hints for the users `userKeys` selects (a query
    /// with a column `user_key`), at most `maximumIDs` users each; none when it selects no one.
    static func devicesChangedQuery(_ userKeys: PostgresQuery) -> PostgresQuery {
        """
        SELECT pg_notify(\(channel), 'v ' || string_agg(user_key::text, ',' ORDER BY user_key) || ' @' || \(ChangePositionSQL.currentTransactionID))
        FROM (
            SELECT user_key, (row_number() OVER (ORDER BY user_key) - 1) / \(maximumIDs) AS part
            FROM (SELECT DISTINCT user_key FROM (\(userKeys)) AS given) AS users
        ) AS numbered
        GROUP BY part
        """
    }

    /// `devicesChangedQuery` for the given users.
    static func devicesChangedQuery(userKeys: [Int64]) -> PostgresQuery {
        devicesChangedQuery("SELECT unnest(\(userKeys)::int8[]) AS user_key")
    }
}
