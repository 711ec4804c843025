package expiry

import (
	"context"
	"testing"
	"time"
)

// TestReportContactPurge: the cleanup run erases the contact addresses of reports filed longer ago
// than the retention, in batches, and keeps the reports and the younger contacts; a retention of 0
// keeps every contact.
func TestReportContactPurge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	code := e.paste("reported", time.Time{})
	e.exec(`INSERT INTO reports (receipt_hash, short_code, content_hash, reason, contact, created_at)
		SELECT sha256(('old' || i)::bytea), $1, sha256('reported'::bytea), 'spam', 'a@example.org',
		       now() - interval '100 days' + i * interval '1 second'
		FROM generate_series(1, 2500) i`, code)
	e.exec(`INSERT INTO reports (receipt_hash, short_code, content_hash, reason, contact, created_at)
		SELECT sha256(('young' || i)::bytea), $1, sha256('reported'::bytea), 'spam', 'b@example.org', now() - interval '80 days'
		FROM generate_series(1, 7) i`, code)

	kept := e.runOnce(e.expirer(1, func(c *Config) { c.ReportRetention, c.AuditRetention = 0, 0 }))
	if kept.Purged != 0 || e.count(`SELECT count(*) FROM reports WHERE contact IS NOT NULL`) != 2507 {
		t.Errorf("retention 0: purged %d; want every contact kept", kept.Purged)
	}
	r := e.runOnce(e.expirer(1, func(c *Config) { c.ReportRetention, c.AuditRetention, c.BatchSize = 90*24*time.Hour, 0, 1000 }))
	if r.Purged != 2500 || r.LastError != "" {
		t.Errorf("purged %d (error %q), want the 2500 contacts older than 90 days", r.Purged, r.LastError)
	}
	if n := e.count(`SELECT count(*) FROM reports WHERE contact = 'b@example.org'`); n != 7 || e.count(`SELECT count(*) FROM reports WHERE contact IS NOT NULL`) != 7 {
		t.Errorf("%d younger contacts left; want exactly those 7", n)
	}
	if n := e.count(`SELECT count(*) FROM reports`); n != 2507 {
		t.Errorf("%d reports left, want all 2507", n)
	}
}

// TestReportGauges: the backlog's refresh sets pastebin_reports_open and the oldest open report's
// age from the open reports alone.
func TestReportGauges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	code := e.paste("reported", time.Time{})
	e.exec(`INSERT INTO reports (receipt_hash, short_code, content_hash, reason, created_at, state)
		VALUES (sha256('a'::bytea), $1, sha256('reported'::bytea), 'spam', now() - interval '2 hours', 'open'),
		       (sha256('b'::bytea), $1, sha256('reported'::bytea), 'spam', now() - interval '1 hour', 'open'),
		       (sha256('c'::bytea), $1, sha256('reported'::bytea), 'spam', now() - interval '9 hours', 'dismissed')`, code)
	x := e.expirer(1)
	x.refreshBacklog(context.Background())
	if got := e.metric("pastebin_reports_open"); got != 2 {
		t.Errorf("pastebin_reports_open %v, want 2", got)
	}
	if age := e.metric("pastebin_reports_oldest_open_age_seconds"); age < 7190 || age > 7300 {
		t.Errorf("oldest open report's age %vs, want about two hours", age)
	}
}
