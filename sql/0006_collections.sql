-- What one user's collection of one channel needs besides the recipient rows: the unread count's
-- per-user part, last read / last seen, the last notification and activity time for the channel list,
-- and a reset count that ends every token issued before an admin reset the user's channel.
--
-- Unread counts are counters, never a COUNT over a user's copies, and a broadcast must not write a
-- counter per user it reaches (docs/decisions/2026-11-22-unread-counters-broadcasts-per-channel.md).
-- So a user's unread count in a channel is
--     unread_adjustment + herald_broadcasts_reaching(user, channel)
-- where the adjustment is kept in the same transaction as every per-user change (+1 for a targeted
-- copy, -1 for each copy read or removed for the user, +1 when a broadcast the user had already read
-- or removed is deleted), and the second term counts the live broadcasts of the channel whose
-- fan-out has passed the user's key: one index entry per broadcast, not per recipient. The
-- adjustment may therefore be negative.
CREATE TABLE channel_states (
    user_key bigint NOT NULL,
    channel_key bigint NOT NULL,
    unread_adjustment bigint NOT NULL DEFAULT 0,
    last_read_at timestamptz,
    last_seen_at timestamptz,
    last_notification_id bigint,
    last_activity_at timestamptz NOT NULL DEFAULT now(),
    reset_count int NOT NULL DEFAULT 0,
    PRIMARY KEY (user_key, channel_key)
) WITH (fillfactor = 80);  -- room for HOT updates: counters change often, no indexed column does

-- Live broadcasts by channel and progress: what herald_broadcasts_reaching counts; and by progress
-- alone, for the badge (every channel at once).
CREATE INDEX notifications_broadcasts ON notifications (channel_key, fanout_after)
    WHERE audience = 'all' AND deleted_at IS NULL;
CREATE INDEX notifications_broadcast_progress ON notifications (fanout_after)
    WHERE audience = 'all' AND deleted_at IS NULL;

-- How many live broadcasts of the channel have reached the user (their copy exists).
CREATE FUNCTION herald_broadcasts_reaching(p_user_key bigint, p_channel_key bigint) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT count(*) FROM notifications
    WHERE channel_key = p_channel_key AND audience = 'all' AND deleted_at IS NULL AND fanout_after >= p_user_key
$$;

-- The user's unread count in the channel (see above). A missing state row counts as adjustment 0.
-- (SQL functions with a FROM are not inlined; the per-poll queries spell these out instead.)
CREATE FUNCTION herald_unread(p_user_key bigint, p_channel_key bigint) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce((SELECT unread_adjustment FROM channel_states WHERE user_key = p_user_key AND channel_key = p_channel_key), 0)
        + herald_broadcasts_reaching(p_user_key, p_channel_key)
$$;

-- The channels a user has a state in or a broadcast copy from, with their unread counts: the channel
-- list, the per-channel counts and the badge.
CREATE FUNCTION herald_user_channels(p_user_key bigint) RETURNS TABLE (channel_key bigint, unread bigint)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT k.channel_key, herald_unread(p_user_key, k.channel_key)
    FROM (
        SELECT s.channel_key FROM channel_states s WHERE s.user_key = p_user_key
        UNION
        SELECT n.channel_key FROM notifications n
        WHERE n.audience = 'all' AND n.deleted_at IS NULL AND n.fanout_after >= p_user_key
    ) AS k
$$;

-- Server-wide values that every replica must share: the HMAC key of sync tokens (generated on first
-- use), the compaction horizon.
CREATE TABLE herald_settings (
    name text PRIMARY KEY,
    value bytea NOT NULL
);

-- Samples of the change-position horizon over time, so that "older than the retention" can be turned
-- into a position: compaction removes tombstones below the newest horizon older than the retention,
-- and tokens below it are no longer live.
CREATE TABLE change_horizons (
    xid bigint PRIMARY KEY,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX change_horizons_recorded_at ON change_horizons (recorded_at);

-- Compaction finds tombstones by position; only deleted copies are in this index, so fan-outs (which
-- insert live copies) never pay for it.
CREATE INDEX notification_recipients_tombstones ON notification_recipients (change_xid) WHERE deleted;
