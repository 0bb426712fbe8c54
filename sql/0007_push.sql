-- Devices, APNs credentials, and the durable outbox of silent refresh pushes.

-- A user's iOS devices. A token belongs to one user at a time: registering it for another user moves it.
CREATE TABLE devices (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_key bigint NOT NULL REFERENCES users (key) ON DELETE CASCADE,
    -- Lowercase hex, as APNs takes it in the request path.
    token text NOT NULL UNIQUE,
    environment text NOT NULL CHECK (environment IN ('sandbox', 'production')),
    topic text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- The last (re-)registration: an APNs 410 older than this does not remove the token.
    registered_at timestamptz NOT NULL DEFAULT now(),
    -- Refresh state (see herald's PushStore):
    -- the id of the transaction that last asked for a refresh of this device; NULL: nothing wanted.
    refresh_wanted_xid bigint,
    -- the notification that first caused the wanted refresh (for its "pushes sent" count).
    refresh_notification_id bigint,
    -- a refresh push was delivered and the device has not synced since: no other is sent (coalescing).
    refresh_outstanding boolean NOT NULL DEFAULT false,
    last_push_at timestamptz,
    last_synced_at timestamptz,
    -- retries: when the next attempt may start, and how many failed in a row.
    next_attempt_at timestamptz NOT NULL DEFAULT '-infinity',
    attempts integer NOT NULL DEFAULT 0,
    -- a dispatcher's claim; once past, another dispatcher may take the device (crash recovery).
    claimed_until timestamptz
);
CREATE INDEX devices_user ON devices (user_key, registered_at);
-- The dispatcher's work list: devices that want a refresh and have none outstanding.
CREATE INDEX devices_refresh_due ON devices (next_attempt_at)
    WHERE refresh_wanted_xid IS NOT NULL AND NOT refresh_outstanding;

-- The outbox: written in the same transaction as the change it announces. One row per notification
-- change (all its recipients) or per broadcast fan-out batch (its users in (user_after, user_through]),
-- not one per user, so a 100,000-user fan-out stays a handful of rows. The dispatcher turns rows into
-- per-device refresh wants, deleting them in the same transaction.
CREATE TABLE push_outbox (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    notification_id bigint NOT NULL,
    user_after bigint,
    user_through bigint,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Pushes that were refused for good or ran out of retries, for admins (GET /v1/push/failures).
CREATE TABLE push_failures (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_key bigint,
    device_token text NOT NULL,
    environment text NOT NULL,
    topic text NOT NULL,
    status integer,
    reason text NOT NULL,
    attempts integer NOT NULL,
    token_removed boolean NOT NULL,
    failed_at timestamptz NOT NULL DEFAULT now()
);

-- APNs credentials. `secret` (the .p8 PEM or the .p12 bytes) and `password` are AES-256-GCM sealed
-- under HERALD_SECRET_KEY: nonce || ciphertext || tag.
CREATE TABLE apns_credentials (
    name text PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('token', 'certificate')),
    environment text NOT NULL CHECK (environment IN ('sandbox', 'production')),
    topic text NOT NULL,
    key_id text,
    team_id text,
    secret bytea NOT NULL,
    password bytea,
    certificate_expires_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE notifications ADD COLUMN pushes_sent bigint NOT NULL DEFAULT 0;
