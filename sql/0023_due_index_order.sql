-- A lane claims a batch of due rows in (next_attempt_at, id) order. Without the id in the index the
-- claim read and sorted every due row of its service to find the first batch — all of a large send's
-- backlog, whose rows mostly share one next_attempt_at — so each claim cost as much as the backlog
-- was long. With it, a claim reads about a batch's worth of index entries.
DROP INDEX device_push_state_due;
CREATE INDEX device_push_state_due ON device_push_state (service, next_attempt_at, device_id)
    WHERE wanted_xid IS NOT NULL AND NOT outstanding;
DROP INDEX alert_pushes_due;
CREATE INDEX alert_pushes_due ON alert_pushes (service, next_attempt_at, id);
