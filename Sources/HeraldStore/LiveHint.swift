import Postgres

/// What a committed change tells every Herald process's live hub, as the payload of
/// `NOTIFY herald_live`. Only a hint: it names what changed, and each hub reads the change itself
/// from the database for the sockets it holds. Sent by the transaction that makes the change, so it
/// arrives after the commit (never for a rollback) and in commit order.
///
/// The text form is small and fixed (`NOTIFY` payloads are limited to 8,000 bytes): fields separated
/// by spaces, the first one naming the kind.
public enum LiveHint: Sendable, Equatable {
    /// A notification changed for its recipients — all of them, or those with keys in
    /// `(usersAfter, usersThrough]` (a broadcast's fan-out batch).
    case notification(NotificationChange, id: Int64, channelKey: Int64, usersAfter: Int64?, usersThrough: Int64?)
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

    public enum NotificationChange: String, Sendable {
        case created, updated, deleted
    }

    /// The `LISTEN`/`NOTIFY` channel.
    public static let channel = "herald_live"

    /// Receipts name at most this many ids per hint, which keeps the payload far below the limit.
    public static let maximumIDs = 100

    public var payload: String {
        switch self {
        case .notification(let change, let id, let channelKey, let after, let through):
            var text = "n \(change.rawValue) \(id) \(channelKey)"
            if let after, let through { text += " \(after) \(through)" }
            return text
        case .channelState(let userKey, let channelKey):
            return "s \(userKey) \(channelKey)"
        case .delivered(let userKey, let channelKey, let ids):
            return "d \(userKey) \(channelKey) " + ids.map(String.init).joined(separator: ",")
        case .sessionsRevoked(let userKey):
            return "r \(userKey)"
        case .channelChanged(let channelKey):
            return "c \(channelKey)"
        case .channelDeleted(let url, let xid):
            // A channel URL has no spaces (`Channel.urlProblem`), so it can be the last field.
            return "x \(xid) \(url)"
        }
    }

    /// Parses a payload; `nil` for anything malformed (it is then ignored).
    public init?(payload: String) {
        let fields = payload.split(separator: " ")
        guard let kind = fields.first else { return nil }
        let numbers = fields.dropFirst().map { Int64($0) }
        switch kind {
        case "n" where fields.count == 4 || fields.count == 6:
            guard let change = NotificationChange(rawValue: String(fields[1])),
                let id = Int64(fields[2]), let channelKey = Int64(fields[3])
            else { return nil }
            if fields.count == 6 {
                guard let after = Int64(fields[4]), let through = Int64(fields[5]) else { return nil }
                self = .notification(change, id: id, channelKey: channelKey, usersAfter: after, usersThrough: through)
            } else {
                self = .notification(change, id: id, channelKey: channelKey, usersAfter: nil, usersThrough: nil)
            }
        case "s" where fields.count == 3:
            guard let user = numbers[0], let channel = numbers[1] else { return nil }
            self = .channelState(userKey: user, channelKey: channel)
        case "d" where fields.count == 4:
            let ids = fields[3].split(separator: ",").map { Int64($0) }
            guard let user = numbers[0], let channel = numbers[1], !ids.contains(nil) else { return nil }
            self = .delivered(userKey: user, channelKey: channel, notificationIDs: ids.compactMap { $0 })
        case "r" where fields.count == 2:
            guard let user = numbers[0] else { return nil }
            self = .sessionsRevoked(userKey: user)
        case "c" where fields.count == 2:
            guard let channel = numbers[0] else { return nil }
            self = .channelChanged(channelKey: channel)
        case "x" where fields.count == 3:
            guard let xid = numbers[0] else { return nil }
            self = .channelDeleted(url: String(fields[2]), xid: xid)
        default:
            return nil
        }
    }

    /// Sends the hint from the caller's transaction (delivered at its commit).
    func send(on connection: PostgresConnection) async throws {
        try await connection.query(query)
    }

    /// An SQL query that sends `delivered` hints for the rows of `source` (what follows `FROM`: a
    /// relation with columns `user_key`, `channel_key`, `notification_id`, and optionally a `WHERE`),
    /// one per user and channel and at most `maximumIDs` ids each, with the payloads `payload` writes;
    /// it returns one row per hint. For statements that find out themselves what they changed, so
    /// that the hint goes in the same statement.
    static func deliveredHintsSQL(from source: String) -> String {
        """
        SELECT pg_notify('\(channel)', 'd ' || user_key || ' ' || channel_key || ' ' || string_agg(notification_id::text, ',' ORDER BY notification_id))
        FROM (
            SELECT user_key, channel_key, notification_id,
                (row_number() OVER (PARTITION BY user_key, channel_key ORDER BY notification_id) - 1) / \(maximumIDs) AS part
            FROM \(source)
        ) AS numbered
        GROUP BY user_key, channel_key, part
        """
    }

    /// The statement that sends the hint, for a transaction sent in one piece.
    var query: PostgresQuery {
        "SELECT pg_notify(\(Self.channel), \(payload))"
    }

    /// The statement that sends the hint only when `condition` holds (evaluated in the same transaction).
    func query(when condition: PostgresQuery) -> PostgresQuery {
        "SELECT pg_notify(\(Self.channel), \(payload)) WHERE \(condition)"
    }
}
