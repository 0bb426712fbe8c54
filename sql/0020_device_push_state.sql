-- Refresh push state in a narrow table of its own, one row per device (0007 kept it in devices).
--
-- Every refresh push writes this state twice: the want with its claim, then the delivery. In the
-- device row each write was a new version of a wide row and an entry in each of its four indexes (the
-- 64-character token's unique index among them), since the dispatcher's partial index names columns
-- that both writes change. Here each write is a row of integers and times, indexed twice.
CREATE TABLE device_push_state (
    device_id bigint PRIMARY KEY REFERENCES devices (id) ON DELETE CASCADE,
    -- the id of the transaction that last asked for a refresh of this device; NULL: nothing wanted.
    wanted_xid bigint,
    -- the notification that first caused the wanted refresh (for its "pushes sent" count).
    notification_id bigint,
    -- a refresh push was delivered and the device has not synced since: no other is sent (coalescing).
    outstanding boolean NOT NULL DEFAULT false,
    last_push_at timestamptz,
    last_synced_at timestamptz,
    -- retries: when the next attempt may start, and how many failed in a row.
    next_attempt_at timestamptz NOT NULL DEFAULT '-infinity',
    attempts integer NOT NULL DEFAULT 0,
    -- a dispatcher's claim; once past, another dispatcher may take the device (crash recovery).
    claimed_until timestamptz
) WITH (fillfactor = 80);
-- The dispatcher's work list: devices that want a refresh and have none outstanding.
CREATE INDEX device_push_state_due ON device_push_state (next_attempt_at)
    WHERE wanted_xid IS NOT NULL AND NOT outstanding;

INSERT INTO device_push_state (device_id, wanted_xid, notification_id, outstanding, last_push_at, last_synced_at,
    next_attempt_at, attempts, claimed_until)
SELECT id, refresh_wanted_xid, refresh_notification_id, refresh_outstanding, last_push_at, last_synced_at,
    next_attempt_at, attempts, claimed_until
FROM devices;

DROP INDEX devices_refresh_due;
ALTER TABLE devices
    DROP COLUMN refresh_wanted_xid,
    DROP COLUMN refresh_notification_id,
    DROP COLUMN refresh_outstanding,
    DROP COLUMN last_push_at,
    DROP COLUMN last_synced_at,
    DROP COLUMN next_attempt_at,
    DROP COLUMN attempts,
    DROP COLUMN claimed_until;
