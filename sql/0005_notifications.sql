-- Notifications and their recipients.
--
-- Users and channels get a compact internal key: per-recipient rows are the biggest table by far,
-- and an 8-byte key keeps them (and their indexes) narrow and cheap to compare. The key of a user
-- is also the order `audience: "all"` fans out in. A channel deleted and created again gets a new
-- key, so old notifications never reappear in it.
ALTER TABLE users ADD COLUMN key bigint GENERATED ALWAYS AS IDENTITY UNIQUE;
ALTER TABLE channels ADD COLUMN key bigint GENERATED ALWAYS AS IDENTITY UNIQUE;

-- One row per notification: what was sent (the data rendered with the shared variables, the
-- template version it was rendered with) and, for `audience: "all"`, how far the background fan-out
-- has come.
CREATE TABLE notifications (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_key bigint NOT NULL REFERENCES channels (key) ON DELETE CASCADE,
    template_key text NOT NULL,
    template_version int NOT NULL,
    variables jsonb NOT NULL DEFAULT '{}',
    data jsonb NOT NULL,
    push_title text,
    push_body text,
    category text NOT NULL DEFAULT '',
    tags text[] NOT NULL DEFAULT '{}',
    event_deadline timestamptz,
    push jsonb NOT NULL DEFAULT '{}',
    audience text NOT NULL CHECK (audience IN ('targets', 'all')),
    -- How many users the send addressed (targets, or every user at the time of the send) and how
    -- many recipient rows exist so far.
    audience_size bigint NOT NULL DEFAULT 0,
    recipient_count bigint NOT NULL DEFAULT 0,
    -- audience "all": users with fanout_after < key <= fanout_through still have to be reached.
    fanout_after bigint NOT NULL DEFAULT 0,
    fanout_through bigint NOT NULL DEFAULT 0,
    fanout_state text NOT NULL DEFAULT 'done' CHECK (fanout_state IN ('running', 'done')),
    -- Some users got their copy at send time (they had per-user variables): batches must skip them.
    fanout_skips_existing boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz,
    FOREIGN KEY (template_key, template_version) REFERENCES templates (key, version)
);
CREATE INDEX notifications_channel ON notifications (channel_key);
-- The fan-out worker's queue: only unfinished broadcasts, so the index stays tiny.
CREATE INDEX notifications_fanout_running ON notifications (id) WHERE fanout_state = 'running';

-- One row per (recipient, notification): the recipient's copy and its state.
--
-- change_xid is the position of the row's latest change in its user's change stream: the id of the
-- transaction that made it (pg_current_xact_id() as bigint). Readers take only rows with
-- change_xid < pg_snapshot_xmin(pg_current_snapshot()), i.e. from transactions that have finished,
-- and page by (change_xid, notification_id). A transaction still open — even one that began before
-- a later one committed — has an xid at or above that horizon, so it sorts after every position
-- already handed to a reader and can never be skipped (docs/scaling.md, "Sync and long transactions").
-- Unlike a per-user counter row it needs no lock per recipient, which a 100,000-user fan-out could
-- not afford. A row holds only its latest change: one transaction's changes become visible
-- together, so no reader needs their order within it.
--
-- data / push_title / push_body are NULL unless the recipient had per-user variables; NULL means
-- "the notification's own". There is deliberately no foreign key: a per-row RI check would be paid by
-- every copy a fan-out writes (docs/decisions/2026-11-22-fanout-plain-insert.md); the code deletes
-- recipients with their notification or channel.
CREATE TABLE notification_recipients (
    user_key bigint NOT NULL,
    channel_key bigint NOT NULL,
    notification_id bigint NOT NULL,
    change_xid bigint NOT NULL,
    status smallint NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2)), -- sent, delivered, read
    deleted boolean NOT NULL DEFAULT false,
    data jsonb,
    push_title text,
    push_body text,
    PRIMARY KEY (user_key, channel_key, notification_id)
);
CREATE INDEX notification_recipients_changes
    ON notification_recipients (user_key, channel_key, change_xid, notification_id);
CREATE INDEX notification_recipients_notification ON notification_recipients (notification_id);

-- Idempotency keys of sends: the first response is kept and replayed for a retry with the same body.
-- Kept at least 24 hours (the housekeeping service removes older ones).
CREATE TABLE idempotency_keys (
    key text PRIMARY KEY CHECK (char_length(key) BETWEEN 1 AND 255),
    request_hash bytea NOT NULL,
    status int NOT NULL,
    response bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
