-- Sign-ins to the admin console (/console). The cookie holds a random token; only its SHA-256 is
-- stored, as for user sessions. Each sign-in has its own CSRF token, which every form of the console
-- carries and every POST must repeat. Signing out deletes the row; housekeeping removes expired ones.
-- A sign-in holds the SHA-256 of the admin token it was made with: a new admin token ends every
-- sign-in made with the old one.
CREATE TABLE console_sessions (
    token_hash bytea PRIMARY KEY,
    csrf_token text NOT NULL,
    admin_token_hash bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_expires_at ON console_sessions (expires_at);
