-- The channel list's rule (herald_user_channels) for some channels of a user only.
--
-- The list's change log needs the entries of the channels that changed, and a live hint the answer
-- for one channel; both called the whole list, which counts the unread notifications of every channel
-- the user has, most of the cost of a change log that found nothing had changed
-- (docs/decisions/2026-11-25-change-log-for-the-changed-channels-only.md). The rule now lives here,
-- with the candidate channels narrowed to
-- p_channels (NULL: all of them); the one-argument form of 0013 calls it with NULL. Both are one
-- SELECT, so both are inlined into the calling statement, and there the NULL folds away: the whole
-- list's plan is the one it had.
CREATE FUNCTION herald_user_channels(p_user_key bigint, p_channels bigint[]) RETURNS TABLE (channel_key bigint, unread bigint)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT k.channel_key, coalesce(s.unread_adjustment, 0) + (
        SELECT count(*) FROM notifications b
        WHERE b.channel_key = k.channel_key AND b.audience = 'all' AND b.deleted_at IS NULL
            AND b.folded_through < b.fanout_through AND b.folded_through < p_user_key AND b.fanout_after >= p_user_key
    )
    FROM (
        SELECT s.channel_key FROM channel_states s
        WHERE s.user_key = p_user_key AND (p_channels IS NULL OR s.channel_key = ANY (p_channels))
        UNION
        SELECT n.channel_key FROM notifications n
        WHERE n.audience = 'all' AND n.deleted_at IS NULL AND (p_channels IS NULL OR n.channel_key = ANY (p_channels))
            AND n.folded_through < n.fanout_through AND n.folded_through < p_user_key AND n.fanout_after >= p_user_key
    ) AS k
    LEFT JOIN channel_states s ON s.user_key = p_user_key AND s.channel_key = k.channel_key
    WHERE s.opened OR EXISTS (
        SELECT 1 FROM notification_recipients r WHERE r.user_key = p_user_key AND r.channel_key = k.channel_key AND NOT r.deleted
    )
$$;

CREATE OR REPLACE FUNCTION herald_user_channels(p_user_key bigint) RETURNS TABLE (channel_key bigint, unread bigint)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT * FROM herald_user_channels(p_user_key, NULL)
$$;
