package expiry

import (
	"context"
	"sync"
	"testing"
	"time"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestPacingCeiling: with PASTEBIN_CLEANUP_MAX_RATE, a run's rate stays under the ceiling however it
// is measured: the bucket starts empty and every claim waits for a batch's tokens first.
func TestPacingCeiling(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 3000, Expired: 3000, Shared: 0.4, Tag: "M"})
	const ceiling = 600
	x := e.expirer(2, func(c *Config) { c.BatchSize, c.Pacing = 100, Pacing{Mode: PacingOff, MaxRate: ceiling} })
	start := time.Now()
	r := e.runOnce(x)
	elapsed := time.Since(start)
	if r.Tombstoned != 3000 {
		t.Fatalf("tombstoned %d, want 3000", r.Tombstoned)
	}
	for _, rate := range []float64{3000 / elapsed.Seconds(), 3000 / r.Duration} {
		if rate > ceiling*1.03 {
			t.Errorf("drained at %.0f pastes/s, over the ceiling of %d by more than 3%%", rate, ceiling)
		}
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

// TestPacingSlowsAndRecovers drives the automatic pacing with real finishing transactions: while
// another transaction keeps taking the content rows' locks (the database made slow on purpose),
// the finishing transactions wait, the rate limit falls and says why; once the locks are gone it
// climbs back to the ceiling. It asserts on the limit's trend, with bounded waits, never on speed.
func TestPacingSlowsAndRecovers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if _, err := storetest.Seed(ctx, e.store.Pool(), storetest.SeedSpec{Pastes: 30000, Expired: 30000, Shared: 0.4, Tag: "P"}); err != nil {
		t.Fatal(err)
	}
	const ceiling, floor = 1000, 100
	x := e.expirer(2, func(c *Config) {
		c.BatchSize = 100
		c.Pacing = Pacing{Mode: PacingAuto, MaxRate: ceiling, MinRate: floor, Target: 200 * time.Millisecond,
			tuning: tuning{smoothing: 500 * time.Millisecond, riseTime: 3 * time.Second, minCooldown: 500 * time.Millisecond}}
	})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan store.Run, 1)
	go func() {
		r, _ := x.RunOnce(runCtx, "test")
		done <- r
	}()
	waitFor(t, "the drain at its ceiling", func() bool {
		return e.metric("pastebin_cleanup_batches_total") >= 5 && e.metric("pastebin_cleanup_rate_limit") == ceiling
	})

	stopLocks := e.holdContentLocks(time.Second)
	waitFor(t, "the limit cut to 30% of the ceiling", func() bool {
		return x.pacer.state().Reason == reasonDatabaseSlow && e.metric("pastebin_cleanup_rate_limit") <= 0.3*ceiling
	})
	if n := e.metric("pastebin_cleanup_paced_total", "reason", reasonDatabaseSlow); n < 1 {
		t.Errorf(`pastebin_cleanup_paced_total{reason="database_slow"} = %g, want cuts counted`, n)
	}
	if l := e.metric("pastebin_cleanup_rate_limit"); l < floor {
		t.Errorf("limit %g, below the minimum %d", l, floor)
	}
	stopLocks()
	waitFor(t, "the limit back at the ceiling", func() bool {
		s := x.pacer.state()
		return s.Reason == reasonMaxRate && s.RateLimit != nil && *s.RateLimit == ceiling
	})

	cancel()
	r := <-done
	if r.Pacing.Mode != PacingAuto || r.Pacing.WaitedSeconds <= 0 {
		t.Errorf("report's pacing %+v, want auto with time waited", r.Pacing)
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
