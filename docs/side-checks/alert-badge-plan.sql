-- The plan of AlertStore.uncountedUnread before and after sql/0015, on the two tables it reads, cut
-- to the columns it uses: 1,000,000 notifications (2 of them sent with counted_in_badge false),
-- 20,000 users with a copy of each of the first 200 (a third read), a batch of 500 users.
--   psql "<conninfo of a scratch cluster>" -f docs/side-checks/alert-badge-plan.sql
DROP DATABASE IF EXISTS alert_badge_plan;
CREATE DATABASE alert_badge_plan;
\c alert_badge_plan
CREATE TABLE notifications (id bigint PRIMARY KEY, channel_key bigint NOT NULL, deleted_at timestamptz, push jsonb NOT NULL);
CREATE TABLE notification_recipients (
    user_key bigint, channel_key bigint, notification_id bigint, status smallint NOT NULL DEFAULT 0,
    deleted boolean NOT NULL DEFAULT false, PRIMARY KEY (user_key, channel_key, notification_id)
);
CREATE INDEX notification_recipients_notification ON notification_recipients (notification_id, user_key);
INSERT INTO notifications
SELECT g, 1, NULL, CASE WHEN g IN (100, 200) THEN '{"alert":true,"counted_in_badge":false}' ELSE '{"alert":true,"counted_in_badge":true}' END::jsonb
FROM generate_series(1, 1000000) AS g;
INSERT INTO notification_recipients (user_key, channel_key, notification_id, status)
SELECT u, 1, n, CASE WHEN n % 3 = 0 THEN 2 ELSE 0 END FROM generate_series(1, 20000) AS u, generate_series(1, 200) AS n;
VACUUM ANALYZE;
SELECT array_agg(g)::text AS users FROM generate_series(5001, 5500) AS g \gset
PREPARE uncounted(bigint[]) AS
    SELECT r.user_key, count(*) FROM notification_recipients r JOIN notifications n ON n.id = r.notification_id
    WHERE r.user_key = ANY($1) AND r.status < 2 AND NOT r.deleted AND n.deleted_at IS NULL
        AND n.push->>'counted_in_badge' = 'false'
    GROUP BY r.user_key;
\echo before sql/0015
-- Herald's statements are prepared once per connection: both the custom and the generic plan count.
SET plan_cache_mode = force_custom_plan;
EXPLAIN (ANALYZE, COSTS OFF) EXECUTE uncounted(:'users');
SET plan_cache_mode = force_generic_plan;
EXPLAIN (ANALYZE, COSTS OFF) EXECUTE uncounted(:'users');
RESET plan_cache_mode;
CREATE INDEX notifications_uncounted ON notifications (id)
    WHERE deleted_at IS NULL AND push->>'counted_in_badge' = 'false';
CREATE STATISTICS notifications_counted_in_badge ON (push->>'counted_in_badge') FROM notifications;
ANALYZE notifications;
DEALLOCATE uncounted;
PREPARE uncounted(bigint[]) AS
    SELECT r.user_key, count(*) FROM notification_recipients r JOIN notifications n ON n.id = r.notification_id
    WHERE r.user_key = ANY($1) AND r.status < 2 AND NOT r.deleted AND n.deleted_at IS NULL
        AND n.push->>'counted_in_badge' = 'false'
    GROUP BY r.user_key;
\echo after sql/0015
-- Herald's statements are prepared once per connection: both the custom and the generic plan count.
SET plan_cache_mode = force_custom_plan;
EXPLAIN (ANALYZE, COSTS OFF) EXECUTE uncounted(:'users');
SET plan_cache_mode = force_generic_plan;
EXPLAIN (ANALYZE, COSTS OFF) EXECUTE uncounted(:'users');
RESET plan_cache_mode;
\c postgres
DROP DATABASE alert_badge_plan;
