-- The channel list and the badge's per-channel counts (herald_user_channels), two changes.
--
-- Inlined. PostgreSQL inlines a set-returning SQL function into the statement that calls it (and so
-- into that statement's cached plan) when its body is one SELECT, but it never inlines a scalar SQL
-- function whose body holds a subquery: herald_unread and herald_broadcasts_reaching run as queries of
-- their own, planned again on every execution of the calling statement. That planning was most of the
-- cost of GET /v1/me/unread and GET /v1/me/channels, and spelling the count out (herald_broadcasts_
-- reaching's, as below) more than doubled the badge query's rate
-- (docs/decisions/2026-11-22-sql-functions-planned-per-execution.md).
--
-- Opened or with a live copy. The list shows the channels a user has a live notification in or has
-- opened (loaded its collection, or marked in it). A channel state alone is not enough: sends and
-- folding create one, and it outlives the notifications, so a channel whose only notification was
-- deleted stayed in the list of users who had never looked at it. Existing states count as opened
-- (the ADD's default fills them without rewriting the table), so that nothing listed before
-- disappears; new ones start unopened.
ALTER TABLE channel_states ADD COLUMN opened boolean NOT NULL DEFAULT true;
ALTER TABLE channel_states ALTER COLUMN opened SET DEFAULT false;

-- The probe for a live copy stops at the user's first one in the channel (the primary key's prefix).
CREATE OR REPLACE FUNCTION herald_user_channels(p_user_key bigint) RETURNS TABLE (channel_key bigint, unread bigint)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT k.channel_key, coalesce(s.unread_adjustment, 0) + (
        SELECT count(*) FROM notifications b
        WHERE b.channel_key = k.channel_key AND b.audience = 'all' AND b.deleted_at IS NULL
            AND b.folded_through < b.fanout_through AND b.folded_through < p_user_key AND b.fanout_after >= p_user_key
    )
    FROM (
        SELECT s.channel_key FROM channel_states s WHERE s.user_key = p_user_key
        UNION
        SELECT n.channel_key FROM notifications n
        WHERE n.audience = 'all' AND n.deleted_at IS NULL
            AND n.folded_through < n.fanout_through AND n.folded_through < p_user_key AND n.fanout_after >= p_user_key
    ) AS k
    LEFT JOIN channel_states s ON s.user_key = p_user_key AND s.channel_key = k.channel_key
    WHERE s.opened OR EXISTS (
        SELECT 1 FROM notification_recipients r WHERE r.user_key = p_user_key AND r.channel_key = k.channel_key AND NOT r.deleted
    )
$$;
