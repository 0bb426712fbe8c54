-- A user's own states of a notification, beside read: archived (out of the default collection, in
-- `status=archived`). A user's delete is the copy's tombstone (`deleted`), as an admin's delete is
-- for every copy. Each change of state gives the copy a new change position, so it reaches every
-- device by incremental sync and moves the copy in or out of filtered collections by position.
-- A constant default: adding the column rewrites nothing.
ALTER TABLE notification_recipients ADD COLUMN archived boolean NOT NULL DEFAULT false;
