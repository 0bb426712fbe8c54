-- Topics: keys with subscribers ("everyone watching order A-1"), and sends to them.
--
-- A topic's key is internal, like a user's or a channel's: subscription rows are many and narrow.
-- A topic deleted and created again gets a new key. Users subscribe themselves only where the topic
-- allows it; a subscriber may mute a topic (a send to it then gives them nothing).
CREATE TABLE topics (
    key bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9:._@-]{1,128}$'),
    name text NOT NULL DEFAULT '' CHECK (char_length(name) <= 255),
    self_subscribe boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The primary key is the fan-out's order (a topic's subscribers by user key, a batch a range of it);
-- the second index serves a user's own list and the cascade of an erasure.
CREATE TABLE topic_subscriptions (
    topic_key bigint NOT NULL REFERENCES topics (key) ON DELETE CASCADE,
    user_key bigint NOT NULL REFERENCES users (key) ON DELETE CASCADE,
    muted boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic_key, user_key)
);
CREATE INDEX topic_subscriptions_user ON topic_subscriptions (user_key, topic_key);

-- A send to a topic is fanned out like `audience: "all"`, in batches by user key, from the
-- subscription table as each batch finds it (a user who unsubscribes before the fan-out reaches them
-- gets nothing; one who subscribes before it does gets the notification). The notification keeps the
-- topic's id, which outlives the topic, and the users the send excluded.
ALTER TABLE notifications DROP CONSTRAINT notifications_audience_check;
ALTER TABLE notifications ADD CONSTRAINT notifications_audience_check CHECK (audience IN ('targets', 'all', 'topic'));
ALTER TABLE notifications ADD COLUMN topic_key bigint;
ALTER TABLE notifications ADD COLUMN topic text;
ALTER TABLE notifications ADD COLUMN excluded_keys bigint[] NOT NULL DEFAULT '{}';

-- The unread rule for broadcasts (sends fanned out in the background: audience "all" and topics)
-- changes in one way: a broadcast counts for a user its fan-out has passed only if the user has a
-- copy of it. For "all" every user passed had one; a topic's fan-out passes users who are not
-- subscribers. The copy is probed by the recipients' primary key, once per broadcast still in flight
-- (fanning out or folding); folded broadcasts are not looked at, as before. A copy of a broadcast in
-- flight is never removed (compaction keeps a reached user's tombstone until the broadcast goes), so
-- what is counted only changes by a batch's commit.
DROP INDEX notifications_broadcasts;
DROP INDEX notifications_broadcast_progress;
DROP INDEX notifications_folding;
CREATE INDEX notifications_broadcasts ON notifications (channel_key, fanout_after)
    WHERE audience <> 'targets' AND deleted_at IS NULL AND folded_through < fanout_through;
CREATE INDEX notifications_broadcast_progress ON notifications (fanout_after)
    WHERE audience <> 'targets' AND deleted_at IS NULL AND folded_through < fanout_through;
CREATE INDEX notifications_folding ON notifications (id)
    WHERE audience <> 'targets' AND deleted_at IS NULL AND fanout_state = 'done' AND folded_through < fanout_through;

CREATE OR REPLACE FUNCTION herald_broadcasts_reaching(p_user_key bigint, p_channel_key bigint) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT count(*) FROM notifications b
    WHERE b.channel_key = p_channel_key AND b.audience <> 'targets' AND b.deleted_at IS NULL
        AND b.folded_through < b.fanout_through AND b.folded_through < p_user_key AND b.fanout_after >= p_user_key
        AND EXISTS (
            SELECT 1 FROM notification_recipients reached
            WHERE reached.user_key = p_user_key AND reached.channel_key = b.channel_key AND reached.notification_id = b.id)
$$;

CREATE OR REPLACE FUNCTION herald_user_channels(p_user_key bigint, p_channels bigint[]) RETURNS TABLE (channel_key bigint, unread bigint)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT k.channel_key, coalesce(s.unread_adjustment, 0) + (
        SELECT count(*) FROM notifications b
        WHERE b.channel_key = k.channel_key AND b.audience <> 'targets' AND b.deleted_at IS NULL
            AND b.folded_through < b.fanout_through AND b.folded_through < p_user_key AND b.fanout_after >= p_user_key
            AND EXISTS (
                SELECT 1 FROM notification_recipients reached
                WHERE reached.user_key = p_user_key AND reached.channel_key = b.channel_key AND reached.notification_id = b.id)
    )
    FROM (
        SELECT s.channel_key FROM channel_states s
        WHERE s.user_key = p_user_key AND (p_channels IS NULL OR s.channel_key = ANY (p_channels))
        UNION
        SELECT n.channel_key FROM notifications n
        WHERE n.audience <> 'targets' AND n.deleted_at IS NULL AND (p_channels IS NULL OR n.channel_key = ANY (p_channels))
            AND n.folded_through < n.fanout_through AND n.folded_through < p_user_key AND n.fanout_after >= p_user_key
            AND EXISTS (
                SELECT 1 FROM notification_recipients reached
                WHERE reached.user_key = p_user_key AND reached.channel_key = n.channel_key AND reached.notification_id = n.id)
    ) AS k
    LEFT JOIN channel_states s ON s.user_key = p_user_key AND s.channel_key = k.channel_key
    WHERE s.opened OR EXISTS (
        SELECT 1 FROM notification_recipients r WHERE r.user_key = p_user_key AND r.channel_key = k.channel_key AND NOT r.deleted
    )
$$;
