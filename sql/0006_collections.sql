-- What one user's collection of one channel needs besides the recipient rows: the unread counter
-- (kept in the same transaction as every change that moves it, so reading it is one row, never a
-- COUNT), last read / last seen, the last notification and activity time for the channel list, and a
-- reset count that ends every token issued before an admin reset the user's channel.
CREATE TABLE channel_states (
    user_key bigint NOT NULL,
    channel_key bigint NOT NULL,
    unread_count bigint NOT NULL DEFAULT 0 CHECK (unread_count >= 0),
    last_read_at timestamptz,
    last_seen_at timestamptz,
    last_notification_id bigint,
    last_activity_at timestamptz NOT NULL DEFAULT now(),
    reset_count int NOT NULL DEFAULT 0,
    PRIMARY KEY (user_key, channel_key)
) WITH (fillfactor = 80);  -- room for HOT updates: counters change often, no indexed column does

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
