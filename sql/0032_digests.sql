-- Digests: a send with a batch (`notifications.batch`: key, window, alert, items) opens a digest for
-- each user it gives a copy to, until `batch_closes_at` (its creation plus the window). A later send
-- with the same key in the same channel folds into the copy of each user who has one of an open
-- digest instead of adding a copy: the copy is rendered again with the batch and changes in place
-- (a new position), `batch_count` counting the sends folded in and `batch_items` naming the latest
-- of them (NULL on a copy nothing folded into yet: a batch of one, itself). Copies of open digests
-- are found through the digest's notification, so the recipients need no index of their own.
-- `batch_alert_at` is when a digest whose alert goes at the window's end is due to alert; NULL once
-- its alert is queued (or when it has none).
ALTER TABLE notifications ADD COLUMN batch jsonb;
ALTER TABLE notifications ADD COLUMN batch_key text;
ALTER TABLE notifications ADD COLUMN batch_closes_at timestamptz;
ALTER TABLE notifications ADD COLUMN batch_alert_at timestamptz;
-- `batch_folded`: users a batched send folded into their digests (it gave them no copy).
ALTER TABLE notifications ADD COLUMN batch_folded bigint NOT NULL DEFAULT 0;
ALTER TABLE notification_recipients ADD COLUMN batch_count integer;
ALTER TABLE notification_recipients ADD COLUMN batch_items bigint[];
CREATE INDEX notifications_open_digests ON notifications (channel_key, batch_key, batch_closes_at) WHERE batch_key IS NOT NULL;
CREATE INDEX notifications_digest_alerts ON notifications (batch_alert_at) WHERE batch_alert_at IS NOT NULL;
