-- Webhooks: what happened to what the app sent, told to the app's backend.
--
-- An event is written by the transaction that makes the change it reports (herald_webhook_event), so
-- there is none for a change that rolled back and none is lost to a crash: it is an outbox. It is
-- written only when some webhook wants its type, with one delivery row per such webhook. The
-- dispatcher (WebhookStore) claims a webhook's due deliveries a batch at a time with a lease
-- (SKIP LOCKED: replicas share the work), posts them, and deletes them on success; an event goes with
-- its last delivery.
CREATE TABLE webhooks (
    name text PRIMARY KEY CHECK (char_length(name) BETWEEN 1 AND 64),
    url text NOT NULL,
    events text[] NOT NULL,
    -- The signing secret, AES-256-GCM sealed under HERALD_SECRET_KEY like APNs keys.
    secret bytea NOT NULL,
    -- Most events per request.
    batch_size int NOT NULL DEFAULT 50 CHECK (batch_size BETWEEN 1 AND 500),
    -- Since when every attempt has failed (NULL: the last one succeeded), and when the endpoint was
    -- paused for failing too long (its deliveries wait until a PUT resumes it).
    failing_since timestamptz,
    paused_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    type text NOT NULL,
    data jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
    webhook text NOT NULL REFERENCES webhooks (name) ON DELETE CASCADE ON UPDATE CASCADE,
    event_id bigint NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    attempts int NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    claimed_until timestamptz,
    last_status int,
    last_error text,
    -- Refused for good (a 4xx other than 408 and 429) or out of retries: listed, resent on request.
    failed_at timestamptz,
    PRIMARY KEY (webhook, event_id)
);
-- The dispatcher's work list, and the dead letters of a webhook.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (webhook, next_attempt_at) WHERE failed_at IS NULL;
CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (webhook, event_id) WHERE failed_at IS NOT NULL;
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- Records an event of `p_type` for every webhook that wants it, in the caller's transaction; nothing
-- when none does. Wakes the dispatchers at commit.
CREATE FUNCTION herald_webhook_event(p_type text, p_data jsonb) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhooks WHERE p_type = ANY (events)) THEN
        RETURN;
    END IF;
    INSERT INTO webhook_events (type, data) VALUES (p_type, p_data) RETURNING id INTO v_id;
    INSERT INTO webhook_deliveries (webhook, event_id) SELECT name, v_id FROM webhooks WHERE p_type = ANY (events);
    PERFORM pg_notify('herald_webhooks', '');
END
$$;

-- Whether some webhook wants events of `p_type`: statements that write events for many rows test it
-- first, so that without such a webhook they read nothing.
CREATE FUNCTION herald_webhook_wanted(p_type text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM webhooks WHERE p_type = ANY (events))
$$;
