-- A user's choices per category of a channel: whether its notifications reach their collection at
-- all (inbox) and whether they may alert them (push). NULL follows the channel's default for the
-- category (`inbox_default`, `push_default` in the channel's categories, both true unless the admin
-- says otherwise); the store removes a row once neither is chosen.
--
-- Sends read it as a set: a copy is written only for users whose inbox choice lets it through, so a
-- broadcast's fan-out joins this table (by channel and category: the second index) for its range of
-- users, and the unread rule counts copies (sql/0024), never the choices.
CREATE TABLE category_preferences (
    user_key bigint NOT NULL REFERENCES users (key) ON DELETE CASCADE,
    channel_key bigint NOT NULL REFERENCES channels (key) ON DELETE CASCADE,
    category text NOT NULL,
    inbox boolean,
    push boolean,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_key, channel_key, category)
);
CREATE INDEX category_preferences_channel ON category_preferences (channel_key, category, user_key);

-- The category's defaults when the notification was sent, so that every fan-out batch and every
-- alert applies the rule the send was made under.
ALTER TABLE notifications ADD COLUMN inbox_default boolean NOT NULL DEFAULT true;
ALTER TABLE notifications ADD COLUMN push_default boolean NOT NULL DEFAULT true;
