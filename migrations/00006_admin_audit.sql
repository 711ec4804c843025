-- +goose Up

-- Every admin action, written in the same transaction as its effect: when, which admin credential
-- (a fingerprint of the token's hash, or the command line's user and host), through what, on which
-- paste or content, why, and what it did. Append-only: the triggers below refuse to change or
-- remove a row, whoever asks.
CREATE TABLE admin_audit (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    actor        text        NOT NULL,
    via          text        NOT NULL CHECK (via IN ('api', 'console', 'cli')),
    action       text        NOT NULL
                 CHECK (action IN ('cleanup', 'takedown', 'block', 'unblock', 'sign-in', 'sign-out')),
    short_code   text        COLLATE "C",
    content_hash bytea,
    reason       text        NOT NULL DEFAULT '',
    detail       jsonb       NOT NULL DEFAULT '{}'
);
-- A retried takedown and block of a paste that is gone already finds its content hash here.
CREATE INDEX idx_admin_audit_code ON admin_audit (short_code) WHERE content_hash IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION admin_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'admin_audit is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd
CREATE TRIGGER admin_audit_no_change BEFORE UPDATE OR DELETE ON admin_audit
    FOR EACH ROW EXECUTE FUNCTION admin_audit_append_only();
CREATE TRIGGER admin_audit_no_truncate BEFORE TRUNCATE ON admin_audit
    FOR EACH STATEMENT EXECUTE FUNCTION admin_audit_append_only();

-- +goose Down
DROP TABLE admin_audit;
DROP FUNCTION admin_audit_append_only();
