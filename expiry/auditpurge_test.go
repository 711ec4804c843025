package expiry

import (
	"context"
	"testing"
	"time"
)

// TestAuditPurge: the cleanup run purges admin audit entries older than the retention, in batches,
// and keeps the younger ones; the log stays append-only to anything else, an old entry included;
// a retention of 0 keeps every entry.
func TestAuditPurge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`INSERT INTO admin_audit (at, actor, via, action, reason)
		SELECT now() - interval '400 days' + i * interval '1 second', 'token:test', 'api', 'takedown', 'old'
		FROM generate_series(1, 2500) i`)
	e.exec(`INSERT INTO admin_audit (at, actor, via, action, reason)
		SELECT now() - interval '300 days' + i * interval '1 second', 'token:test', 'console', 'block', 'kept'
		FROM generate_series(1, 7) i`)
	for _, refused := range []string{
		`DELETE FROM admin_audit WHERE reason = 'old'`,
		`UPDATE admin_audit SET reason = 'changed' WHERE reason = 'old'`,
		`TRUNCATE admin_audit`,
	} {
		if _, err := e.store.Pool().Exec(context.Background(), refused); err == nil {
			t.Errorf("%s: allowed, want the append-only guard to refuse it", refused)
		}
	}

	kept := e.runOnce(e.expirer(1, func(c *Config) { c.AuditRetention = 0 }))
	if kept.Purged != 0 || e.count(`SELECT count(*) FROM admin_audit`) != 2507 {
		t.Errorf("retention 0: purged %d, %d entries left; want none purged", kept.Purged, e.count(`SELECT count(*) FROM admin_audit`))
	}
	r := e.runOnce(e.expirer(1, func(c *Config) { c.AuditRetention, c.BatchSize = 365*24*time.Hour, 1000 }))
	if r.Purged != 2500 || r.LastError != "" {
		t.Errorf("purged %d (error %q), want the 2500 entries older than a year", r.Purged, r.LastError)
	}
	if n := e.count(`SELECT count(*) FROM admin_audit WHERE reason = 'kept'`); n != 7 || e.count(`SELECT count(*) FROM admin_audit`) != 7 {
		t.Errorf("%d of the 7 younger entries left, %d entries in all; want exactly those 7", n, e.count(`SELECT count(*) FROM admin_audit`))
	}
	if _, err := e.store.Pool().Exec(context.Background(), `DELETE FROM admin_audit`); err == nil {
		t.Error("a DELETE after the purge was allowed: the purge's permission outlived its statement")
	}
}
