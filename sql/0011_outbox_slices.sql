-- The dispatcher expands an outbox row a slice of recipients at a time, in user-key order
-- (PushStore.expandOutbox): the recipients-by-notification index carries the user key so each slice
-- is a range scan from where the last one stopped.
DROP INDEX notification_recipients_notification;
CREATE INDEX notification_recipients_notification ON notification_recipients (notification_id, user_key);
