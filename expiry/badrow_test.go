package expiry

import (
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestWrongRefCountDoesNotStallItsBatch: one content row with a wrong ref_count among a batch of
// innocent pastes. Counted too low, the batch's finishing transaction breaks ref_count's CHECK (the
// batch holds more references than the row counts) or the foreign key (the count reaches zero while a
// live paste still points at the row); cleanup recounts the batch's content under row locks, as fsck
// --repair does, and the whole batch is cleaned in the same run, the repaired hash in the report and
// the metrics. Counted too high, nothing fails: the row outlives its pastes, and fsck finds it.
func TestWrongRefCountDoesNotStallItsBatch(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		expired  int  // pastes of the bad content in the batch
		live     bool // and one more that lives on
		refCount int
		repaired bool
	}{
		{name: "too low: CHECK", expired: 3, refCount: 1, repaired: true},
		{name: "too low with a live paste: foreign key", expired: 1, live: true, refCount: 1, repaired: true},
		{name: "too high: nothing fails", expired: 1, refCount: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.seed(storetest.SeedSpec{Pastes: 300, Expired: 200, Shared: 0.4, Tag: "B"})
			for range tt.expired {
				e.paste("the bad row", time.Now().Add(-time.Minute))
			}
			if tt.live {
				e.paste("the bad row", time.Now().Add(time.Hour))
			}
			bad := sha("the bad row")
			e.exec(`UPDATE content SET ref_count = $2 WHERE content_hash = $1`, bad, tt.refCount)
			x := e.expirer(1) // one batch of 1000 holds every expired paste

			r := e.runOnce(x)
			want := int64(200 + tt.expired)
			if r.Tombstoned != want || r.Errors != 0 || r.BatchesRetried != 0 {
				t.Errorf("run %+v; want all %d expired pastes tombstoned, no error, no retry", r.RunCounts, want)
			}
			if n := e.count(`SELECT count(*) FROM pastes WHERE expires_at <= now()`); n != 0 {
				t.Errorf("%d expired pastes left after the run", n)
			}
			checkRepairReport(t, e, r, bad, tt.repaired)
			a := e.audit()
			if !tt.repaired {
				// The row outlives its pastes: exactly what fsck is for.
				wantMismatch := hex.EncodeToString(bad) + ": ref_count 2, pastes 0"
				if !slices.Equal(a.RefMismatches, []string{wantMismatch}) {
					t.Errorf("audit finds %v, want only %s", a.RefMismatches, wantMismatch)
				}
				if rep := e.fsck(e.checker(false, time.Hour)); rep.Refs.Wrong != 1 || rep.OK {
					t.Errorf("fsck after a run over a count too high: %+v, want the one wrong row", rep.Refs)
				}
				a.RefMismatches = nil
			}
			a.Consistent(t)
		})
	}
}

func checkRepairReport(t *testing.T, e *env, r store.Run, bad []byte, repaired bool) {
	t.Helper()
	wantHashes, wantCount := []string{}, 0.0
	if repaired {
		wantHashes, wantCount = []string{hex.EncodeToString(bad)}, 1
	}
	var got []string
	for _, h := range r.RepairedHashes {
		got = append(got, h.String())
	}
	if r.ContentRepaired != int64(wantCount) || !slices.Equal(append([]string{}, got...), wantHashes) {
		t.Errorf("report: %d content rows repaired, hashes %v; want %v", r.ContentRepaired, got, wantHashes)
	}
	if n := e.metric("pastebin_cleanup_failures_total", "stage", "constraint"); n != wantCount {
		t.Errorf(`pastebin_cleanup_failures_total{stage="constraint"} = %g, want %g`, n, wantCount)
	}
	if n := e.metric("pastebin_cleanup_content_repaired_total"); n != wantCount {
		t.Errorf("pastebin_cleanup_content_repaired_total = %g, want %g", n, wantCount)
	}
	if repaired && !strings.Contains(e.logs.String(), hex.EncodeToString(bad)) {
		t.Errorf("the log does not name the repaired content hash")
	}
}

// TestBatchRetriedAfterConnectionLost: the connection of a batch's finishing transaction dies while
// the transaction waits for a content row's lock (held here on purpose). The batch is retried
// after a back-off and cleaned in the same run, instead of waiting for the watchdog.
func TestBatchRetriedAfterConnectionLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 150, Expired: 100, Shared: 0.4, Tag: "C"})
	ctx := context.Background()
	holder, err := e.store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT 1 FROM content FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	x := e.expirer(1)
	done := make(chan store.Run, 1)
	go func() { done <- e.runOnceNoFatal(x) }()

	pid := e.waitForLockWaiter()
	e.exec(`SELECT pg_terminate_backend($1)`, pid)
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Status != "finished" || r.Tombstoned != 100 || r.BatchesRetried < 1 || r.Errors != 0 {
		t.Errorf("run %s %+v (%s); want every paste tombstoned after a retry, no error", r.Status, r.RunCounts, r.LastError)
	}
	if n := e.metric("pastebin_cleanup_batch_retries_total"); n < 1 {
		t.Errorf("pastebin_cleanup_batch_retries_total = %g, want at least 1", n)
	}
	e.audit().Consistent(t)
}

// runOnceNoFatal runs once from another goroutine, where t.Fatal must not be called.
func (e *env) runOnceNoFatal(x *Expirer) store.Run {
	r, err := x.RunOnce(context.Background(), "test")
	if err != nil {
		r.Status, r.LastError = "error", err.Error()
	}
	return r
}

// waitForLockWaiter waits until a backend of the env's database waits for a row lock and returns its
// pid.
func (e *env) waitForLockWaiter() int {
	e.t.Helper()
	var pid int
	waitFor(e.t, "a backend waits for a lock", func() bool {
		err := e.store.Pool().QueryRow(context.Background(), `
			SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
			LIMIT 1`).Scan(&pid)
		return err == nil
	})
	return pid
}

// TestFinishEndsBeforeTheWatchdog: a batch's finishing transaction waits for a content row's lock
// that is never released. Its attempts and retries end within half of StuckAfter after the claim
// (finishDeadline), and the batch goes back to the queue, well before the watchdog would hand its
// rows to another worker. Per attempt alone (stageTimeout) and its retries, it would go on for
// minutes, past StuckAfter.
func TestFinishEndsBeforeTheWatchdog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 60, Expired: 50, Shared: 0.4, Tag: "F"})
	ctx := context.Background()
	holder, err := e.store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT 1 FROM content FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	const stuckAfter = 6 * time.Second
	x := e.expirer(1, func(c *Config) { c.StuckAfter = stuckAfter })
	done := make(chan store.Run, 1)
	go func() { done <- e.runOnceNoFatal(x) }()
	var r store.Run
	select {
	case r = <-done:
	case <-time.After(stuckAfter): // the run began before its claim: the claim is younger than this
		holder.Rollback(ctx)
		<-done
		t.Fatalf("the finish of a batch went on for more than StuckAfter (%s) after its claim", stuckAfter)
	}
	if r.Tombstoned != 0 || r.Errors == 0 || !strings.Contains(r.LastError, "deadline") {
		t.Errorf("run %s %+v (%s); want nothing tombstoned and the batch given up at its deadline", r.Status, r.RunCounts, r.LastError)
	}
	if n := e.count(`SELECT coalesce(sum(cardinality(codes)), 0) FROM cleanup_claims`); n != 0 {
		t.Errorf("%d rows left claimed, want the batch handed back to the queue", n)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r := e.runOnce(x); r.Tombstoned != 50 {
		t.Errorf("the next run tombstoned %d, want the 50 handed back", r.Tombstoned)
	}
	e.audit().Consistent(t)
}
