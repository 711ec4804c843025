package expiry

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestPacingCeiling: with PASTEBIN_CLEANUP_MAX_RATE, the drain's rate stays under the ceiling,
// measured over the drain alone, from its first finishing transaction to its last (the tombstones'
// times), where an overshoot would show undiluted by the run's other stages.
func TestPacingCeiling(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 3000, Expired: 3000, Shared: 0.4, Tag: "M"})
	const ceiling = 600
	x := e.expirer(2, func(c *Config) { c.BatchSize, c.Pacing = 100, Pacing{Mode: PacingOff, MaxRate: ceiling} })
	r := e.runOnce(x)
	if r.Tombstoned != 3000 {
		t.Fatalf("tombstoned %d, want 3000", r.Tombstoned)
	}
	if rate := e.drainRate(100); rate > ceiling*1.05 {
		t.Errorf("drained at %.0f pastes/s from the first batch to the last, over the ceiling of %d by more than 5%%", rate, ceiling)
	}
	p := r.Pacing
	if p.Mode != "max_rate" || p.Reason != reasonMaxRate || p.RateLimit == nil || *p.RateLimit != ceiling || p.WaitedSeconds <= 0 {
		t.Errorf("report's pacing %+v, want max_rate at %d with time waited", p, ceiling)
	}
	if g := e.metric("pastebin_cleanup_rate_limit"); g != ceiling {
		t.Errorf("pastebin_cleanup_rate_limit = %g, want %d", g, ceiling)
	}
	e.audit().Consistent(t)
}

// drainRate is the rate of the drain from its first finishing transaction to its last, batches of
// batch: the tombstones' times are their transactions', so the first batch's time is the start.
func (e *env) drainRate(batch int) float64 {
	e.t.Helper()
	var n int
	var span float64
	err := e.store.Pool().QueryRow(context.Background(), `SELECT count(*), extract(epoch FROM max(deleted_at) - min(deleted_at))
		FROM tombstones WHERE deleted_reason = 'expired'`).Scan(&n, &span)
	if err != nil {
		e.t.Fatal(err)
	}
	return float64(n-batch) / span
}

// TestPacingSlowsAndRecovers drives the automatic pacing with real finishing transactions and no
// users (the signal is the database's): while another transaction keeps taking the content rows'
// locks (the database made slow on purpose), the finishing transactions wait far longer than their
// recent low, and the rate falls to the floor and says why; once the locks are gone it climbs
// again. It asserts on the rate's trend, with bounded waits, never on speed.
func TestPacingSlowsAndRecovers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if _, err := storetest.Seed(ctx, e.store.Pool(), storetest.SeedSpec{Pastes: 30000, Expired: 30000, Shared: 0.4, Tag: "P"}); err != nil {
		t.Fatal(err)
	}
	const ceiling, floor = 2000, 100
	x := e.expirer(2, func(c *Config) {
		c.BatchSize = 100
		c.Pacing = Pacing{Mode: PacingAuto, MaxRate: ceiling, MinRate: floor, LatencyBudget: 1.5, timeScale: 0.05}
	})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan store.Run, 1)
	go func() {
		r, _ := x.RunOnce(runCtx, "test")
		done <- r
	}()
	rate := func() float64 { return e.metric("pastebin_cleanup_rate_limit") }
	waitFor(t, "the drain under way", func() bool { return e.metric("pastebin_cleanup_batches_total") >= 5 })

	before := rate()
	stopLocks := e.holdContentLocks(time.Second)
	waitFor(t, "the rate cut to the floor", func() bool {
		s := x.pacer.state()
		return s.Source == sourceDatabase && s.Reason == reasonMinRate && rate() == floor
	})
	// From above the floor, the way down is a cut, which the metrics count. On a loaded machine the
	// rate may not have left its floor yet when the locks come: then there was nothing to cut.
	if n := e.metric("pastebin_cleanup_paced_total", "reason", reasonOverBudget); n < 1 && before > floor {
		t.Errorf(`pastebin_cleanup_paced_total{reason="over_budget"} = %g after a fall from %g/s, want cuts counted`, n, before)
	}
	stopLocks()
	waitFor(t, "the rate climbing again", func() bool { return x.pacer.state().Reason == reasonRising && rate() > floor })

	cancel()
	r := <-done
	// The finishing latency's budget is the budget squared (2.25), and its aim half of that in log
	// terms: the budget itself.
	if r.Pacing.Mode != PacingAuto || r.Pacing.WaitedSeconds <= 0 || r.Pacing.Source != sourceDatabase || math.Abs(r.Pacing.Aim-1.5) > 1e-9 {
		t.Errorf("report's pacing %+v, want auto, steered by the database, aiming at 1.5, with time waited", r.Pacing)
	}
	a := e.audit() // the seed's blobs were never uploaded: only the database's invariants apply
	if len(a.RefMismatches) > 0 || len(a.Unreferenced) > 0 || a.LiveWithout > 0 {
		t.Errorf("after a paced run: %d ref_count mismatches, %d unreferenced rows, %d live pastes without content",
			len(a.RefMismatches), len(a.Unreferenced), a.LiveWithout)
	}
}

// holdContentLocks keeps taking every content row's lock for hold at a time, with short gaps,
// until the returned stop is called: a finishing transaction that starts meanwhile waits.
func (e *env) holdContentLocks(hold time.Duration) (stop func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			tx, err := e.store.Pool().Begin(ctx)
			if err != nil {
				return
			}
			if _, err := tx.Exec(ctx, `SELECT 1 FROM content FOR UPDATE`); err == nil {
				sleep(ctx, hold)
			}
			tx.Rollback(context.Background())
			sleep(ctx, 20*time.Millisecond)
		}
	})
	return func() { cancel(); wg.Wait() }
}
