-- Sends that wait for their time (`POST /v1/scheduled-sends`). `request` is the send's body as
-- `POST /v1/notifications` takes it, made as if posted at the due time. Either `send_at` (an instant)
-- or `local_time` (a wall-clock time, delivered when it is that time in each recipient's own time zone:
-- `users.time_zone`) is set. `next_at` is when the schedule is next due; for a local time, the earliest
-- instant among the zones of its recipients it has not yet reached (`zones_done`).
--
-- Claimed as the push outbox is: a worker takes due rows for a lease (`claimed_until`), makes each
-- send with the idempotency key `schedule:<id>:<occurrence>:<part>`, and records it. A worker that
-- dies after the send and before the record leaves the row to the next one, whose send with the
-- same key is answered by the first — so each part is sent once, across restarts and replicas.
CREATE TABLE scheduled_sends (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    request jsonb NOT NULL,
    channel_url text NOT NULL,
    template_key text NOT NULL,
    audience text NOT NULL CHECK (audience IN ('targets', 'all', 'topic')),
    send_at timestamptz,
    local_time text CHECK (local_time ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$'),
    repeat text CHECK (repeat IN ('daily', 'weekly')),
    CHECK ((send_at IS NULL) <> (local_time IS NULL)),
    state text NOT NULL DEFAULT 'scheduled' CHECK (state IN ('scheduled', 'sent', 'canceled', 'failed')),
    next_at timestamptz NOT NULL,
    occurrence integer NOT NULL DEFAULT 0,
    parts integer NOT NULL DEFAULT 0,
    zones_done text[] NOT NULL DEFAULT '{}',
    claimed_until timestamptz,
    attempts integer NOT NULL DEFAULT 0,
    notification_ids bigint[] NOT NULL DEFAULT '{}',
    error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX scheduled_sends_due ON scheduled_sends (next_at) WHERE state = 'scheduled';
CREATE INDEX scheduled_sends_state ON scheduled_sends (state, id);

-- A send for a local time reaches one group of time zones at a time: its notification carries them
-- (NULL: every zone), and its fan-out reaches only users in them.
ALTER TABLE notifications ADD COLUMN time_zones text[];

