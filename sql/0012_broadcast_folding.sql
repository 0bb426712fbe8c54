-- Folding finished broadcasts into the per-user counters.
--
-- A broadcast's fan-out writes no counters: the live broadcasts that reached a user are counted per
-- request instead (herald_broadcasts_reaching). That count grew with every broadcast ever sent, and
-- every poll paid for it (docs/decisions/2026-11-22-broadcast-folding.md). So once a
-- broadcast's fan-out is done, a background worker folds it into the counters of the users it reached,
-- a batch of user keys per transaction, the way the fan-out itself went: each batch adds 1 to each
-- user's unread_adjustment and moves folded_through up in the same transaction. A user is counted by
-- the per-request count only while folded_through < user_key <= fanout_after, and a fully folded
-- broadcast (folded_through = fanout_through) leaves the partial indexes, so the count only ever sees
-- broadcasts still fanning out or folding.
ALTER TABLE notifications ADD COLUMN folded_through bigint NOT NULL DEFAULT 0;

DROP INDEX notifications_broadcasts;
DROP INDEX notifications_broadcast_progress;
CREATE INDEX notifications_broadcasts ON notifications (channel_key, fanout_after)
    WHERE audience = 'all' AND deleted_at IS NULL AND folded_through < fanout_through;
CREATE INDEX notifications_broadcast_progress ON notifications (fanout_after)
    WHERE audience = 'all' AND deleted_at IS NULL AND folded_through < fanout_through;
-- The folding worker's queue: finished broadcasts not yet folded.
CREATE INDEX notifications_folding ON notifications (id)
    WHERE audience = 'all' AND deleted_at IS NULL AND fanout_state = 'done' AND folded_through < fanout_through;

-- (folded_through < fanout_through is implied by the user-key bounds; it is spelled out so that the
-- planner can use the partial indexes.)
CREATE OR REPLACE FUNCTION herald_broadcasts_reaching(p_user_key bigint, p_channel_key bigint) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT count(*) FROM notifications
    WHERE channel_key = p_channel_key AND audience = 'all' AND deleted_at IS NULL
        AND folded_through < fanout_through AND folded_through < p_user_key AND fanout_after >= p_user_key
$$;

-- Folded broadcasts have given their user a channel state, so the second branch only needs the rest.
CREATE OR REPLACE FUNCTION herald_user_channels(p_user_key bigint) RETURNS TABLE (channel_key bigint, unread bigint)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT k.channel_key, herald_unread(p_user_key, k.channel_key)
    FROM (
        SELECT s.channel_key FROM channel_states s WHERE s.user_key = p_user_key
        UNION
        SELECT n.channel_key FROM notifications n
        WHERE n.audience = 'all' AND n.deleted_at IS NULL
            AND n.folded_through < n.fanout_through AND n.folded_through < p_user_key AND n.fanout_after >= p_user_key
    ) AS k
$$;
