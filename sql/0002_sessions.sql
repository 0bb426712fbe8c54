-- Session tokens for users, stored only as SHA-256 hashes. Keyed by user_id first (the token itself
-- names its user), so the table can be distributed by user like every other per-user table.
CREATE TABLE sessions (
    user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, token_hash)
);
