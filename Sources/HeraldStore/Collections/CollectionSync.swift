import HeraldCore

/// The sync protocol's rules for one collection, apart from HTTP and SQL: the token a first load
/// issues, whether a token can continue from a poll's snapshot, when a gap is too large to send as
/// changes, and where the next token stands.
///
/// A token continues only from the same user's collection of the same channel, with the same category
/// filter, before any admin reset, within the retained history (not below the compaction bound) and
/// from this database (not beyond the newest transaction id it can have issued). Anything else answers
/// `is_live: false`, and the client loads the collection afresh.
public struct CollectionSync: Sendable {
    /// More pending changes than this and a token is no longer live: a fresh load is cheaper.
    public var hugeGap: Int
    /// The most changes one answer carries.
    public var limit: Int

    public init(hugeGap: Int, limit: Int) {
        self.hugeGap = hugeGap
        self.limit = limit
    }

    /// The changes an incremental answer carries, and where its next token stands.
    public struct Page: Sendable {
        public var changes: [(position: ChangePosition, change: CollectionChange)]
        /// More changes wait beyond `next`: the client polls again at once.
        public var hasMore: Bool
        public var next: SyncToken
    }

    /// The token a first load answers with: everything below the snapshot's horizon is in the load, so
    /// later changes come incrementally from there.
    public static func firstToken(userKey: Int64, channelKey: Int64, filter: CollectionFilter, snapshot: CollectionStore.Snapshot) -> SyncToken {
        SyncToken(
            userKey: userKey,
            channelKey: channelKey,
            resetCount: snapshot.state.resetCount,
            filter: filter,
            position: .through(xid: snapshot.horizon - 1)
        )
    }

    /// Whether `token` can continue in `channelKey`'s collection of `userKey`, filtered by `filter`,
    /// as `snapshot` sees it.
    public static func continues(
        _ token: SyncToken,
        userKey: Int64,
        channelKey: Int64,
        filter: CollectionFilter,
        snapshot: CollectionStore.Snapshot
    ) -> Bool {
        token.userKey == userKey && token.channelKey == channelKey
            && token.filter == filter.hash
            && token.resetCount == snapshot.state.resetCount
            && token.position.xid >= snapshot.compactedThrough
            && token.position.xid < snapshot.nextXID
    }

    /// The incremental answer to `token` from `poll` (read with a limit of `limit + 1`, so that a full
    /// page shows), or `nil` when the token is not live. `countPending` counts the changes after the
    /// token below the horizon, stopping at the cap it is given; it is called only when a full page may
    /// hide more than `hugeGap`.
    public func page(
        after token: SyncToken?,
        userKey: Int64,
        filter: CollectionFilter,
        poll: CollectionStore.Poll,
        countPending: (_ cap: Int) async throws -> Int
    ) async throws -> Page? {
        guard let token, Self.continues(token, userKey: userKey, channelKey: poll.channel.key, filter: filter, snapshot: poll.snapshot)
        else { return nil }
        let changes = poll.changes
        // More changes than the threshold in hand, or a full page that may hide more: only then is a
        // (bounded) count needed.
        if changes.count > hugeGap { return nil }
        if changes.count > limit, try await countPending(hugeGap + 1) > hugeGap { return nil }
        let hasMore = changes.count > limit
        let sent = Array(changes.prefix(limit))
        var reached = sent.last?.position ?? token.position
        // A complete answer moves the token up to the horizon, so a quiet client never falls behind
        // the retained history.
        if !hasMore { reached = max(reached, .through(xid: poll.snapshot.horizon - 1)) }
        var next = token
        next.position = reached
        return Page(changes: sent, hasMore: hasMore, next: next)
    }
}
