-- Expired sessions are removed by the hourly housekeeping pass (SessionStore.deleteExpired); this
-- index lets that DELETE find them without reading every session.
CREATE INDEX sessions_expires_at ON sessions (expires_at);
