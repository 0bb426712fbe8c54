import HeraldCore

/// A poll the database answered completely, kept to answer again from memory: a later poll of the same
/// collection whose token stands at or past `from` gets the same answer with its own token back, for
/// as long as nothing the answer shows has changed (see `ChangeRecord`).
public struct QuietPoll: Sendable {
    public var channel: CollectionChannel
    public var filter: CollectionFilter
    public var snapshot: CollectionStore.Snapshot
    /// Where the database's answer left its token: nothing lies between it and the snapshot's horizon.
    public var from: ChangePosition

    public init(channel: CollectionChannel, filter: CollectionFilter, snapshot: CollectionStore.Snapshot, from: ChangePosition) {
        self.channel = channel
        self.filter = filter
        self.snapshot = snapshot
        self.from = from
    }

    /// Whether the database, asked now with `token` by `userKey`, would answer with nothing to send,
    /// given that nothing this answer shows has changed: the token continues in this collection as
    /// the snapshot sees it, and stands at or past `from`.
    public func answers(_ token: SyncToken, userKey: Int64) -> Bool {
        token.position >= from
            && CollectionSync.continues(token, userKey: userKey, channelKey: channel.key, filter: filter, snapshot: snapshot)
    }
}
