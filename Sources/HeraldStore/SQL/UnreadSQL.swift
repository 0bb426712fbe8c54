import Postgres

/// The unread rule, as SQL fragments that statements inline.
///
/// A user's unread count in a channel is the channel state's `unread_adjustment` plus the live
/// broadcasts that reached the user and are not yet folded into the counters. The same rule exists as
/// SQL functions (`herald_broadcasts_reaching`, `herald_unread`, `herald_user_channels` in `sql/0006`,
/// `sql/0012`, `sql/0013`, `sql/0021` and `sql/0024`), which migrations and ad-hoc queries use. The hot statements inline
/// these fragments instead: PostgreSQL does not inline SQL functions that read tables, so a call costs
/// its statement a planning of the function's query on every execution. A change to the rule changes
/// both: a new migration for the functions, and these fragments.
enum UnreadSQL {
    /// The condition under which broadcast `alias` (a send fanned out in the background: to everyone
    /// or to a topic) counts for user key `user`: live, its fan-out past the user, its folding into the
    /// counters not yet (see `sql/0012`), and the user given a copy — a topic's fan-out passes users who
    /// are not its subscribers (`sql/0024`). The first comparison follows from the next two; it is
    /// spelled out so that the planner picks the partial indexes, which hold only broadcasts not fully
    /// folded. The copy is one probe of the recipients' primary key per broadcast in flight.
    static func countedBroadcast(_ alias: PostgresQuery, reaching user: PostgresQuery) -> PostgresQuery {
        """
        \(alias).audience <> 'targets' AND \(alias).deleted_at IS NULL AND \(alias).folded_through < \(alias).fanout_through \
        AND \(alias).folded_through < \(user) AND \(alias).fanout_after >= \(user) \
        AND EXISTS (SELECT 1 FROM notification_recipients reached \
        WHERE reached.user_key = \(user) AND reached.channel_key = \(alias).channel_key AND reached.notification_id = \(alias).id)
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
