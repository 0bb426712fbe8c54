-- Alert pushes (visible ones, for notifications sent with "push": {"alert": true}).
--
-- The sending transaction writes an alert_outbox row beside its push_outbox row (one per send or
-- fan-out batch). A dispatcher turns it, in one transaction, into alert_pushes rows: one per device of
-- each recipient whose preferences let the alert through at that moment (AlertDecision), and deletes
-- it. Each row is then claimed, sent and deleted — or retried, or listed as a failure — like refresh
-- pushes, but never coalesced: every alert is its own push.
CREATE TABLE alert_outbox (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    notification_id bigint NOT NULL,
    user_after bigint,
    user_through bigint,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE alert_pushes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_key bigint NOT NULL,
    device_id bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    notification_id bigint NOT NULL,
    -- Sent past the user's preferences (force_push).
    forced boolean NOT NULL DEFAULT false,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0,
    claimed_until timestamptz
);
CREATE INDEX alert_pushes_due ON alert_pushes (next_attempt_at);
CREATE INDEX alert_pushes_device ON alert_pushes (device_id);
