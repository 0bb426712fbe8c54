-- Live streams: which Herald processes are up, which sockets they hold (presence), delivery and read
-- times, and view/click events.

-- One row per running Herald process (a "node"). A node renews `expires_at` on every heartbeat; once it
-- has passed, the node's sockets no longer count (a killed process cannot keep devices online), and a
-- later heartbeat of any node removes the row with its connections.
CREATE TABLE herald_nodes (
    id bigint PRIMARY KEY,
    started_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);

-- Open WebSocket streams. A stream without a device (a browser) makes its user online but no device.
-- Keyed by user first, like every per-user table (docs/scaling.md).
CREATE TABLE stream_connections (
    node_id bigint NOT NULL REFERENCES herald_nodes (id) ON DELETE CASCADE,
    id bigint NOT NULL,
    user_key bigint NOT NULL,
    device_id bigint,
    connected_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (node_id, id)
);
CREATE INDEX stream_connections_user ON stream_connections (user_key);
CREATE INDEX stream_connections_device ON stream_connections (device_id) WHERE device_id IS NOT NULL;

-- When each copy was delivered (a receipt from the device) and read. Nullable without a default, so
-- adding them rewrites nothing and a fan-out writes no more than before.
ALTER TABLE notification_recipients ADD COLUMN delivered_at timestamptz, ADD COLUMN read_at timestamptz;

-- Views and clicks, one row per (notification, kind, user) with how often and when first and last.
CREATE TABLE notification_events (
    notification_id bigint NOT NULL,
    kind smallint NOT NULL CHECK (kind IN (1, 2)), -- viewed, clicked
    user_key bigint NOT NULL,
    count integer NOT NULL DEFAULT 1,
    first_at timestamptz NOT NULL DEFAULT now(),
    last_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (notification_id, kind, user_key)
);
