package expiry

import (
	"context"
	"strings"
	"testing"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestShutdownDuringClaim: a shutdown that lands while a worker claims lets the claim commit, and
// the worker finishes that batch before it stops; nothing is left claimed for the watchdog, and
// stopping is not counted as an error. The shutdown lands while the claim, sent whole to the
// server, waits there for the claims' advisory lock, which the test holds.
func TestShutdownDuringClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 1000, Expired: 800, Shared: 0.4, Tag: "S"})
	hold, err := e.store.Pool().Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(context.Background())
	if _, err := hold.Exec(context.Background(), `SELECT pg_advisory_xact_lock($1, $2)`, store.ClaimLockClass, store.ClaimLockKey); err != nil {
		t.Fatal(err)
	}
	x := e.expirer(1, func(c *Config) { c.BatchSize = 200 })
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan store.Run)
	go func() {
		r, err := x.RunOnce(ctx, "test")
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	storetest.WaitFor(t, "a claim waits for the claims' lock", func() bool {
		// The tests running beside this one (this package's and, in make test, the other
		// packages') wait for their own claims' locks: only this test's database counts.
		return storetest.LockWaiters(t, e.store.Pool(), `locktype = 'advisory'
			AND classid = $1::int::oid AND objid = $2::int::oid AND objsubid = 2`,
			store.ClaimLockClass, store.ClaimLockKey) > 0
	})
	stop()
	if err := hold.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Claimed != 200 || r.Tombstoned != 200 || r.Errors != 0 {
		t.Errorf("run stopped during its first claim: claimed %d, tombstoned %d, errors %d (%s); want one whole batch of 200 and no error",
			r.Claimed, r.Tombstoned, r.Errors, r.LastError)
	}
	if n := e.count(`SELECT coalesce(sum(cardinality(codes)), 0) FROM cleanup_claims`); n != 0 {
		t.Errorf("%d pastes left claimed after the shutdown", n)
	}
	e.audit().Consistent(t)
}

// TestUnfinishedBatchHandedBack: a batch whose finishing transaction fails goes back to the queue
// at once, in one statement, rather than wait StuckAfter for the watchdog; its worker stops claiming,
// so the run ends; and the next run cleans everything, each paste once.
func TestUnfinishedBatchHandedBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 700, Expired: 500, Shared: 0.4, Tag: "H"})
	e.exec(`CREATE FUNCTION refuse_tombstones() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'tombstones refused for the test'; END $$`)
	e.exec(`CREATE TRIGGER refuse BEFORE INSERT ON tombstones FOR EACH ROW EXECUTE FUNCTION refuse_tombstones()`)
	x := e.expirer(2, func(c *Config) { c.BatchSize = 100 })
	r, err := x.RunOnce(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if r.Claimed == 0 || r.Tombstoned != 0 || r.Errors == 0 {
		t.Errorf("run with every finish refused: claimed %d, tombstoned %d, errors %d", r.Claimed, r.Tombstoned, r.Errors)
	}
	if n := e.count(`SELECT coalesce(sum(cardinality(codes)), 0) FROM cleanup_claims`); n != 0 {
		t.Errorf("%d pastes left claimed for the watchdog", n)
	}
	if !strings.Contains(e.logs.String(), "cleanup batch handed back to the queue") {
		t.Errorf("no batch was handed back:\n%s", e.logs.String())
	}
	e.audit().Consistent(t)

	e.exec(`DROP TRIGGER refuse ON tombstones`)
	r = e.runOnce(e.expirer(2, func(c *Config) { c.BatchSize = 100 }))
	if r.ResetStuck != 0 || r.Claimed != 500 || r.Tombstoned != 500 {
		t.Errorf("next run: reset %d, claimed %d, tombstoned %d; want 0, 500, 500", r.ResetStuck, r.Claimed, r.Tombstoned)
	}
	a := e.audit()
	a.Consistent(t)
	if len(a.Outbox) != 0 {
		t.Errorf("outbox holds %d keys", len(a.Outbox))
	}
}
