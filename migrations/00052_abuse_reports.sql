-- +goose Up

-- Abuse reports (issue 18): a notice from anyone about one paste, kept with the paste's code and its
-- content hash, so that the reports on every copy of the same bytes make one case. The notifier
-- holds a receipt, stored here only as its SHA-256 (receipt_hash): whoever reads this table cannot
-- use it to ask for a report's state. A report is open until an operator's takedown, block or
-- dismissal closes it (state, changed_at, by whom: closed_by, how: closed_action), in that action's
-- transaction. The contact address is erased after PASTEBIN_REPORT_RETENTION by the cleanup run's
-- purge (store/reports.go, PurgeReportContacts).
CREATE TABLE reports (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    receipt_hash  bytea       NOT NULL UNIQUE CHECK (length(receipt_hash) = 32),
    short_code    text        COLLATE "C" NOT NULL,
    content_hash  bytea       NOT NULL,
    reason        text        NOT NULL
                  CHECK (reason IN ('illegal', 'personal_data', 'malware', 'spam', 'copyright', 'other')),
    details       text        NOT NULL DEFAULT '' CHECK (octet_length(details) <= 4000),
    contact       text        CHECK (octet_length(contact) <= 320),
    created_at    timestamptz NOT NULL DEFAULT now(),
    state         text        NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'actioned', 'dismissed')),
    changed_at    timestamptz NOT NULL DEFAULT now(),
    closed_by     text,
    closed_action text        CHECK (closed_action IN ('takedown', 'legal', 'block', 'dismiss'))
);
-- The open reports: the queue, the closing of a paste's (takedown) or a content's (block, dismiss),
-- and the gauges' count and oldest age. Small, since reports are closed.
CREATE INDEX idx_reports_open_hash ON reports (content_hash) WHERE state = 'open';
CREATE INDEX idx_reports_open_code ON reports (short_code) WHERE state = 'open';
CREATE INDEX idx_reports_open_created ON reports (created_at) WHERE state = 'open';
-- The closed reports, newest decision first (GET /admin/reports?state=actioned).
CREATE INDEX idx_reports_changed ON reports (changed_at) WHERE state <> 'open';
-- The contact purge, oldest first; a row leaves the index when its contact is erased.
CREATE INDEX idx_reports_contact ON reports (created_at) WHERE contact IS NOT NULL;

-- A dismissal of reports is an admin action of its own in the audit log.
ALTER TABLE admin_audit DROP CONSTRAINT admin_audit_action_check;
ALTER TABLE admin_audit ADD CONSTRAINT admin_audit_action_check
    CHECK (action IN ('cleanup', 'takedown', 'block', 'unblock', 'sign-in', 'sign-out', 'dismiss'));

-- +goose Down
-- The log is append-only: dismissals recorded meanwhile stay, and the narrower check is not
-- validated against them.
ALTER TABLE admin_audit DROP CONSTRAINT admin_audit_action_check;
ALTER TABLE admin_audit ADD CONSTRAINT admin_audit_action_check
    CHECK (action IN ('cleanup', 'takedown', 'block', 'unblock', 'sign-in', 'sign-out')) NOT VALID;
DROP TABLE reports;
