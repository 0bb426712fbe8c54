-- Alert pushes take from their badge each user's unread copies of notifications sent with
-- `push.counted_in_badge: false` (AlertStore.uncountedUnread), once per batch of users claimed. Such
-- notifications are usually few among very many: this partial index finds them directly, and the
-- statistics on the expression tell the planner how few they are, so it starts from them and probes
-- the batch's copies of each, instead of reading every copy of every user in the batch and walking
-- the notifications (docs/decisions/2026-11-23-alert-badges-beside-many-notifications.md).
CREATE INDEX notifications_uncounted ON notifications (id)
    WHERE deleted_at IS NULL AND push->>'counted_in_badge' = 'false';
CREATE STATISTICS notifications_counted_in_badge ON (push->>'counted_in_badge') FROM notifications;
ANALYZE notifications;
