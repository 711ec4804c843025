package expiry

import (
	"context"
	"strings"
	"testing"
	"time"

	"pastebin/store/storetest"
)

// TestLargeBacklogClaimedInHeapOrder: a backlog that is a large share of the table is claimed in
// the heap's order, page after page; a row a user's transaction held as those claims went by is
// claimed afterwards, in expiry order, and every expired paste is cleaned once.
func TestLargeBacklogClaimedInHeapOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.seed(storetest.SeedSpec{Pastes: 3000, Expired: 1500, Shared: 0.4, Tag: "K"})
	e.exec(`ANALYZE pastes`)
	held, err := e.store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback(ctx)
	var code string
	err = held.QueryRow(ctx, `SELECT short_code FROM pastes WHERE expires_at <= now() ORDER BY ctid LIMIT 1 FOR UPDATE`).Scan(&code)
	if err != nil {
		t.Fatal(err)
	}
	x := e.expirer(2, func(c *Config) { c.BatchSize = 10 })
	runs := make(chan struct{})
	go func() { e.runOnce(x); close(runs) }()
	waitFor(t, "the claims in heap order went past the held row", func() bool {
		return e.count(`SELECT count(*) FROM tombstones`) >= 500
	})
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	<-runs

	if !strings.Contains(e.logs.String(), "large backlog: claims in heap order first") {
		t.Errorf("the run did not claim in heap order:\n%s", e.logs.String())
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE expires_at <= now()`); n != 0 {
		t.Errorf("%d expired pastes left, the held one among them: %v", n, e.count(`SELECT count(*) FROM pastes WHERE short_code = $1`, code) == 1)
	}
	if n := e.count(`SELECT count(*) FROM tombstones WHERE deleted_reason = 'expired'`); n != 1500 {
		t.Errorf("%d tombstones, want each of the 1500 expired pastes once", n)
	}
	e.audit().Consistent(t)
}

// TestSmallBacklogClaimedInExpiryOrder: a nightly backlog, a small share of the table, is claimed
// in expiry order, which its index hands over without reading anything else.
func TestSmallBacklogClaimedInExpiryOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 3000, Expired: 100, Shared: 0.4, Tag: "L", LiveFor: time.Hour})
	e.exec(`ANALYZE pastes`)
	r := e.runOnce(e.expirer(1, func(c *Config) { c.BatchSize = 10 }))
	if strings.Contains(e.logs.String(), "claims in heap order") || r.Tombstoned != 100 {
		t.Errorf("run tombstoned %d of 100 (want all, in expiry order):\n%s", r.Tombstoned, e.logs.String())
	}
}
