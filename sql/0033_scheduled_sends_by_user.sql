-- An erasure finds the scheduled sends whose request names the user (`SendRequestUsers`): by
-- containment of the id in its targets, exclusions, forced or mentioned users or sender, and by the
-- keys of its per-user variables. Schedules are kept once made, so these are read by index, not by
-- scanning every request in the erasure's first transaction.
CREATE INDEX scheduled_sends_request ON scheduled_sends USING gin (request jsonb_path_ops);
CREATE INDEX scheduled_sends_user_variables ON scheduled_sends USING gin ((request -> 'user_variables'));
