-- Notification channels. Feed channels list newest first and stay out of the channel list; chat
-- channels list newest last and appear in it. Categories are a small JSON array
-- [{"id","name","is_default"}], validated by Herald (exactly one default when any exist).
CREATE TABLE channels (
    url text PRIMARY KEY CHECK (char_length(url) BETWEEN 1 AND 128),
    kind text NOT NULL CHECK (kind IN ('feed', 'chat')),
    name text NOT NULL DEFAULT '',
    cover_url text NOT NULL DEFAULT '',
    custom_type text NOT NULL DEFAULT '',
    categories jsonb NOT NULL DEFAULT '[]',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
