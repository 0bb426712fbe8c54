-- Push preferences: the user's (trigger option, Do Not Disturb, snooze, time zone, sound) and each
-- channel's trigger option. A user without a row has the defaults.
CREATE TABLE push_preferences (
    user_key bigint PRIMARY KEY REFERENCES users (key) ON DELETE CASCADE,
    trigger_option text NOT NULL DEFAULT 'all' CHECK (trigger_option IN ('all', 'mention_only', 'off')),
    -- The legacy daily window in minutes of the day (it may wrap midnight); NULL when off.
    dnd_start smallint CHECK (dnd_start BETWEEN 0 AND 1439),
    dnd_end smallint CHECK (dnd_end BETWEEN 0 AND 1439),
    -- Weekly windows: [{"day":"monday","windows":[[start minute, end minute], …]}, …].
    dnd_schedules jsonb NOT NULL DEFAULT '[]',
    -- Snooze in Unix milliseconds, end excluded; NULL when off.
    snooze_start bigint,
    snooze_end bigint,
    time_zone text NOT NULL DEFAULT 'UTC',
    sound text,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((dnd_start IS NULL) = (dnd_end IS NULL)),
    CHECK ((snooze_start IS NULL) = (snooze_end IS NULL))
);

CREATE TABLE channel_push_preferences (
    user_key bigint NOT NULL REFERENCES users (key) ON DELETE CASCADE,
    channel_key bigint NOT NULL REFERENCES channels (key) ON DELETE CASCADE,
    trigger_option text NOT NULL CHECK (trigger_option IN ('all', 'mention_only', 'off')),
    PRIMARY KEY (user_key, channel_key)
);
