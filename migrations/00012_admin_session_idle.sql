-- +goose Up

-- When each console session last served a request: a session idle for longer than the console's
-- idle timeout (PASTEBIN_CONSOLE_IDLE_TIMEOUT) opens nothing, however long before its expiry.
ALTER TABLE admin_sessions ADD COLUMN last_seen_at timestamptz NOT NULL DEFAULT now();

-- +goose Down
ALTER TABLE admin_sessions DROP COLUMN last_seen_at;
