-- +goose Up

-- The audit log is kept for PASTEBIN_AUDIT_RETENTION: older entries are purged in batches by the
-- cleanup run, oldest first, by their time (the index below). The append-only guard still refuses
-- every change but that purge: a DELETE of entries older than the time that the purging statement
-- itself names in the transaction-local setting pastebin.audit_purge_before (store/audit.go). A
-- DELETE without it, an UPDATE or a TRUNCATE is refused as before.
CREATE INDEX idx_admin_audit_at ON admin_audit (at);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION admin_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND OLD.at < coalesce(
            nullif(current_setting('pastebin.audit_purge_before', true), '')::timestamptz, '-infinity') THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'admin_audit is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION admin_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'admin_audit is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd
DROP INDEX idx_admin_audit_at;
