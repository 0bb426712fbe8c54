-- Notification templates, one row per version. A changed definition gets the next version;
-- notifications keep the (key, version) they were rendered with, so old versions are never rewritten.
CREATE TABLE templates (
    key text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 64),
    version int NOT NULL CHECK (version > 0),
    definition jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (key, version)
);
