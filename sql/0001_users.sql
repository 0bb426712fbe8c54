-- Users of the applications that Herald serves. The id comes from the customer's own system
-- (1–128 characters); every per-user table is keyed by user_id first so that it can later be
-- distributed by user (see docs/scaling.md).
CREATE TABLE users (
    id text PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 128),
    nickname text NOT NULL DEFAULT '',
    profile_url text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
