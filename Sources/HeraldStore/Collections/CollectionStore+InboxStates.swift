import Foundation
import HeraldCore
import Postgres

/// Which of a user's notifications in a channel an archive takes.
public enum ArchiveScope: Sendable, Equatable {
    /// These notifications.
    case ids([Int64])
    /// Every notification already read.
    case read
    /// Every notification (they are marked read first, as `markRead` of everything does).
    case all
}

/// A user's own states of their notifications beyond read: archive, unarchive, mark unread, delete.
/// Each copy that changes gets a new change position in the same transaction as the unread counter,
/// so every device sees the change by incremental sync (and a filtered collection gains or loses the
/// notification by position); the stream is told through the channel state's hint, as for read marks.
/// An archived notification is always read: archiving reads it, marking it unread unarchives it.
extension CollectionStore {
    /// Archives the notifications of `scope`, reading those not read yet. Returns the state after and
    /// the change's position (see `stateQuery`).
    public func archive(userKey: Int64, channelKey: Int64, scope: ArchiveScope) async throws -> (state: ChannelState, position: Int64) {
        let reads: [PostgresQuery]
        let selection: PostgresQuery
        switch scope {
        case .ids(let ids):
            reads = Self.readStatements(userKey: userKey, channelKey: channelKey, ids: ids)
            selection = "r.notification_id = ANY(\(ids))"
        case .read:
            reads = []
            selection = "r.status = \(CollectionItem.Status.read)"
        case .all:
            reads = Self.readStatements(userKey: userKey, channelKey: channelKey, ids: nil)
            selection = "true"
        }
        // Only read copies: the read marks are a statement of their own, so a copy a broadcast's batch
        // or another device's unread mark makes meanwhile is not archived unread.
        return try await change(
            userKey: userKey,
            channelKey: channelKey,
            reads + [
                Self.stateChange(
                    "SET archived = true",
                    of: "\(selection) AND NOT r.archived AND r.status = \(CollectionItem.Status.read)",
                    userKey: userKey,
                    channelKey: channelKey
                )
            ]
        )
    }

    /// Brings archived notifications back to the default collection.
    public func unarchive(userKey: Int64, channelKey: Int64, ids: [Int64]) async throws -> (state: ChannelState, position: Int64) {
        try await change(
            userKey: userKey,
            channelKey: channelKey,
            [
                Self.stateChange(
                    "SET archived = false",
                    of: "r.notification_id = ANY(\(ids)) AND r.archived",
                    userKey: userKey,
                    channelKey: channelKey
                )
            ]
        )
    }

    /// Marks read notifications unread again (and unarchives them): each counts as unread once more.
    public func markUnread(userKey: Int64, channelKey: Int64, ids: [Int64]) async throws -> (state: ChannelState, position: Int64) {
        try await change(
            userKey: userKey,
            channelKey: channelKey,
            [
                Self.stateChange(
                    "SET status = \(CollectionItem.Status.delivered), read_at = NULL, archived = false",
                    of: "r.notification_id = ANY(\(ids)) AND r.status = \(CollectionItem.Status.read)",
                    userKey: userKey,
                    channelKey: channelKey,
                    unreadDelta: "+ 1"
                )
            ]
        )
    }

    /// Removes notifications from this user's collection only: each copy becomes a tombstone (a
    /// deletion to every device's sync), and leaves the unread count if it was unread.
    public func deleteForUser(userKey: Int64, channelKey: Int64, ids: [Int64]) async throws -> (state: ChannelState, position: Int64) {
        try await change(
            userKey: userKey,
            channelKey: channelKey,
            [
                Self.stateChange(
                    "SET deleted = true, data = NULL, push_title = NULL, push_body = NULL",
                    of: "r.notification_id = ANY(\(ids))",
                    userKey: userKey,
                    channelKey: channelKey,
                    unreadDelta: "- 1",
                    counting: "r.status < \(CollectionItem.Status.read)"
                )
            ]
        )
    }

    // MARK: - Private

    /// Runs a change's statements, then the live hint (when they changed anything) and the state.
    /// The state row comes first, made if the user has none in the channel yet (so there is one to
    /// read) and locked: every change takes the state before the copies, so two changes on two
    /// devices wait for each other instead of deadlocking.
    private func change(userKey: Int64, channelKey: Int64, _ statements: [PostgresQuery]) async throws -> (state: ChannelState, position: Int64) {
        let results = try await client.transaction(
            [
                """
                INSERT INTO channel_states AS s (user_key, channel_key) VALUES (\(userKey), \(channelKey))
                ON CONFLICT (user_key, channel_key) DO UPDATE SET unread_adjustment = s.unread_adjustment
                """
            ] + statements + [
                LiveHint.channelState(userKey: userKey, channelKey: channelKey).query(when: Self.changeRecorded),
                Self.stateQuery(userKey: userKey, channelKey: channelKey),
            ]
        )
        return try Self.decodeState(results.last!.first!)
    }

    /// One statement: `assignments` on the user's live copies in the channel that `condition` picks
    /// (over the copy `r`), each given this transaction's position; with `unreadDelta`, the channel
    /// state's adjustment moves by it for each changed copy that `counting` picks (as the copy was
    /// before: the condition's columns are not assigned). Records whether anything changed, over what
    /// earlier statements recorded. The condition is checked again on a row another transaction
    /// changed meanwhile, so two devices changing the same copy count it once.
    private static func stateChange(
        _ assignments: PostgresQuery,
        of condition: PostgresQuery,
        userKey: Int64,
        channelKey: Int64,
        unreadDelta: PostgresQuery? = nil,
        counting: PostgresQuery = "true"
    ) -> PostgresQuery {
        let changed: PostgresQuery = """
            WITH changed AS (
                UPDATE notification_recipients r \(assignments), change_xid = \(ChangePositionSQL.currentTransactionID)
                WHERE r.user_key = \(userKey) AND r.channel_key = \(channelKey) AND NOT r.deleted AND \(condition)
                RETURNING \(counting) AS counted
            )
            """
        let recorded = recordChange("(SELECT count(*) FROM changed) > 0 OR \(changeRecorded)")
        guard let unreadDelta else { return "\(changed) SELECT \(recorded)" }
        return """
            \(changed), counted AS (SELECT count(*) FILTER (WHERE counted) AS n FROM changed)
            INSERT INTO channel_states AS s (user_key, channel_key, unread_adjustment)
            VALUES (\(userKey), \(channelKey), 0 \(unreadDelta) * (SELECT n FROM counted))
            ON CONFLICT (user_key, channel_key) DO UPDATE SET unread_adjustment = s.unread_adjustment + EXCLUDED.unread_adjustment
            RETURNING \(recorded)
            """
    }
}
