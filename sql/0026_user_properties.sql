-- What an admin knows about a user beyond their name: a locale (a BCP 47 tag, NULL when unknown), a
-- time zone and a small JSON object of the customer's own properties. Templates read them as
-- {{user.locale}}, {{user.properties.first_name}}; `GET /v1/users?property.plan=pro` filters by them,
-- which the GIN index answers with containment (`properties @> '{"plan":"pro"}'`).
ALTER TABLE users ADD COLUMN locale text CHECK (char_length(locale) BETWEEN 1 AND 35);
ALTER TABLE users ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC' CHECK (char_length(time_zone) BETWEEN 1 AND 64);
ALTER TABLE users ADD COLUMN properties jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(properties) = 'object' AND octet_length(properties::text) <= 16384);
CREATE INDEX users_properties ON users USING gin (properties jsonb_path_ops);

-- The time zone has one home: the user's. Push preferences (Do Not Disturb windows) read it from
-- here, and `timezone` in `PUT /v1/me/push-preferences` writes it here.
UPDATE users u SET time_zone = p.time_zone FROM push_preferences p WHERE p.user_key = u.key AND p.time_zone <> 'UTC';
ALTER TABLE push_preferences DROP COLUMN time_zone;

-- A notification whose template reads the recipient's profile ({{user.nickname}}) has each copy
-- rendered for its user: a broadcast's fan-out renders every batch in Herald before writing it.
-- Other notifications keep one rendering and set-based fan-out.
ALTER TABLE notifications ADD COLUMN renders_per_recipient boolean NOT NULL DEFAULT false;
