-- Buttons a notification offers (its template's `actions`, rendered with the send's variables:
-- [{"id","label","url"}]) and, per copy, the ones its user pressed. NULL until one is: the column
-- takes no room in the copies a fan-out writes. Pressing one is a change of the copy like a read,
-- with a position, so it reaches every device by sync; it is counted among the notification's events
-- (kind 3: the users who acted) and raises the webhook event `notification.action`.
ALTER TABLE notifications ADD COLUMN actions jsonb NOT NULL DEFAULT '[]';
ALTER TABLE notification_recipients ADD COLUMN actions_done text[];
ALTER TABLE notification_events DROP CONSTRAINT notification_events_kind_check;
ALTER TABLE notification_events ADD CONSTRAINT notification_events_kind_check CHECK (kind IN (1, 2, 3)); -- viewed, clicked, acted
