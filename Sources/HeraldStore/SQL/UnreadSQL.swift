import Postgres

/// The unread rule, as SQL fragments that statements inline.
///
/// A user's unread count in a channel is the channel state's `unread_adjustment` plus the live
/// broadcasts that reached the user and are not yet folded into the counters. The same rule exists as
/// SQL functions (`herald_broadcasts_reaching`, `herald_unread`, `herald_user_channels` in `sql/0006`,
/// `sql/0012`, `sql/0013` and `sql/0021`), which migrations and ad-hoc queries use. The hot statements inline
/// these fragments instead: PostgreSQL does not inline SQL functions that read tables, so a call costs
/// its statement a planning of the function's query on every execution. A change to the rule changes
/// both: a new migration for the functions, and these fragments.
enum UnreadSQL {
    /// The condition under which broadcast `alias` counts for user key `user`: live, its fan-out past
    /// the user, its folding into the counters not yet (see `sql/0012`). The first comparison follows
    /// from the other two; it is spelled out so that the planner picks the partial indexes, which hold
    /// only broadcasts not fully folded.
    static func countedBroadcast(_ alias: PostgresQuery, reaching user: PostgresQuery) -> PostgresQuery {
        """
        \(alias).audience = 'all' AND \(alias).deleted_at IS NULL AND \(alias).folded_through < \(alias).fanout_through \
        AND \(alias).folded_through < \(user) AND \(alias).fanout_after >= \(user)
        """
    }

    /// How many counted broadcasts reached user key `user` — in channel key `channel`, or in all
    /// channels when it is nil.
    static func broadcastsReaching(user: PostgresQuery, channel: PostgresQuery?) -> PostgresQuery {
        guard let channel else { return "(SELECT count(*) FROM notifications b WHERE \(countedBroadcast("b", reaching: user)))" }
        return "(SELECT count(*) FROM notifications b WHERE \(countedBroadcast("b", reaching: user)) AND b.channel_key = \(channel))"
    }

    /// The user's total unread count: every channel's adjustment plus every counted broadcast that
    /// reached them.
    static func badge(user: PostgresQuery) -> PostgresQuery {
        """
        ((SELECT coalesce(sum(unread_adjustment), 0) FROM channel_states WHERE user_key = \(user)) \
        + \(broadcastsReaching(user: user, channel: nil)))::bigint
        """
    }
}
