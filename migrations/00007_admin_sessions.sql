-- +goose Up

-- Browser sessions of the console at /admin. The browser holds a random secret; only its SHA-256 is
-- here, with the fingerprint of the admin token it was signed in with, so changing the token ends
-- every session, and a sign-out or the expiry ends one.
CREATE TABLE admin_sessions (
    secret_hash bytea       PRIMARY KEY CHECK (length(secret_hash) = 32),
    actor       text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX idx_admin_sessions_expires ON admin_sessions (expires_at);

-- +goose Down
DROP TABLE admin_sessions;
