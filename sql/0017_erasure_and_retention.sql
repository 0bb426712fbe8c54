-- Erasing a user (DELETE /v1/users/{user_id}) and notifications that expire.

-- An erasure's first transaction removes the user's row, and with it by cascade their sessions, devices
-- (and the alert pushes queued for them) and push preferences, and records a job here. The rows keyed
-- by the user's internal key — copies, channel states, view and click events, channel-list removals,
-- push failures — and the idempotency records that name the user are then removed a bounded batch per
-- transaction by the erasure worker (UserErasureStore). The id may be used again at once: a new user
-- gets a new key, which no old row carries. A finished job is kept 30 days for its status, then goes.
CREATE TABLE user_erasures (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id text NOT NULL,
    user_key bigint NOT NULL,
    -- The id of the worker's first transaction on the job, which began after the erasure committed:
    -- every transaction that had an id when the erasure committed has a lower one. The job finishes
    -- only with a sweep that began once all of those had ended (and a grace time after the erasure,
    -- for requests that authenticated just before it), so that nothing they wrote for the key is
    -- missed. NULL until that first transaction.
    erase_horizon bigint,
    requested_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    removed_rows bigint NOT NULL DEFAULT 0,
    -- The last batch's time: workers take the least recently swept job, so one waiting out its grace
    -- time does not hold up the others.
    swept_at timestamptz
);
CREATE INDEX user_erasures_user ON user_erasures (user_id, id);
CREATE INDEX user_erasures_running ON user_erasures (swept_at NULLS FIRST, id) WHERE finished_at IS NULL;

-- An erasure finds the user's rows by key.
CREATE INDEX notification_events_user ON notification_events (user_key, notification_id, kind);
CREATE INDEX push_failures_user ON push_failures (user_key);
-- The user ids a send named (its targets and per-user variables), so that an erasure can remove the
-- idempotency records whose kept response names the user.
ALTER TABLE idempotency_keys ADD COLUMN user_ids text[] NOT NULL DEFAULT '{}';

-- Retention: a channel may keep its notifications for a time (NULL: for ever), and a send may say
-- when it expires. A notification expires at the earlier of the two; the expiry worker then deletes it
-- as DELETE /v1/notifications/{id} would (NotificationStore.expireNext), and compaction removes its
-- tombstones once they are older than the change retention, then the notification's row.
ALTER TABLE channels ADD COLUMN retention_seconds bigint CHECK (retention_seconds > 0);
ALTER TABLE notifications ADD COLUMN expires_at timestamptz;
CREATE INDEX notifications_expiring ON notifications (expires_at) WHERE deleted_at IS NULL AND expires_at IS NOT NULL;
-- A channel's oldest live notifications first, for its retention.
CREATE INDEX notifications_live_age ON notifications (channel_key, created_at) WHERE deleted_at IS NULL;
-- Deleted notifications, for compaction to remove once their copies are gone.
CREATE INDEX notifications_deleted ON notifications (deleted_at) WHERE deleted_at IS NOT NULL;
