-- Throttles: at most `limit` notifications per user per `window` from a channel (or from one of its
-- categories), set on the channel (`channels.throttle`) or on a send; a notification keeps the one it
-- was sent with (`notifications.throttle`, NULL: none). Beyond the cap a notification lands without
-- an alert (`silence`) or not at all (`drop`). What counts is the user's copies of the channel's
-- notifications created within the window before this one — read from the recipients' primary key,
-- so nothing is kept for it. Each user held back is an event of kind 4 (counted in the funnel,
-- raising `notification.throttled`).
ALTER TABLE channels ADD COLUMN throttle jsonb;
ALTER TABLE notifications ADD COLUMN throttle jsonb;
ALTER TABLE notification_events DROP CONSTRAINT notification_events_kind_check;
ALTER TABLE notification_events ADD CONSTRAINT notification_events_kind_check CHECK (kind IN (1, 2, 3, 4)); -- viewed, clicked, acted, throttled
