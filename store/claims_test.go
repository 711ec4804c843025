package store_test

import (
	"context"
	"log/slog"
	"net/url"
	"sync"
	"testing"
	"time"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestClaimsNeverShareAPaste: a claim writes nothing to the pastes it takes, so nothing on the rows
// keeps a second claim off them: the claims' advisory lock and their rows in cleanup_claims must.
// Eight claimers on two stores (two pools, no Redis lock), half in expiry order from the front and
// half in heap order, one store's sessions defaulting to REPEATABLE READ (a claim's snapshot taken
// before the lock was granted would miss the claim committed just before it), claim until nothing is
// left, finishing most claims and handing others back as they go (the finishes and returns on the
// first store: under REPEATABLE READ they would only add retries). Every expired paste is claimed;
// no paste is ever held by two claims at once; each is tombstoned once; the references are exact.
func TestClaimsNeverShareAPaste(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := storetest.NewDirectDatabase(t) // the session setting below is one a pooler refuses
	a, err := store.Open(ctx, dbURL, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	b, err := store.Open(ctx, dbURL+"&default_transaction_isolation="+url.PathEscape("repeatable read"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	const expired = 6000
	if err := storetest.Load(ctx, a.Pool(), storetest.SeedSpec{Pastes: 9000, Expired: expired, Shared: 0.4, Tag: "S"}); err != nil {
		t.Fatal(err)
	}
	pages, err := a.HeapPages(ctx)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	holder := map[string]int64{} // paste → the claim holding it now
	tombstoned := map[string]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		claimer := []*store.Store{a, b}[w%2]
		wg.Go(func() {
			var from store.HeapPosition
			heapOrder := w >= 4
			for n := 0; n < 200; n++ {
				var c store.Claim
				var err error
				if heapOrder {
					c, err = claimer.ClaimExpiredInHeapOrder(ctx, 150, from, pages)
					from = c.Next
				} else {
					c, err = claimer.ClaimExpired(ctx, 150, time.Time{})
				}
				if err != nil {
					t.Error(err)
					return
				}
				if len(c.Codes) == 0 {
					if !heapOrder {
						return
					}
					heapOrder = false // on in expiry order, for what the heap order went past
					continue
				}
				mu.Lock()
				for _, code := range c.Codes {
					if other, ok := holder[code]; ok {
						t.Errorf("%s claimed by %d while claim %d held it", code, c.ID, other)
					}
					holder[code] = c.ID
				}
				mu.Unlock()
				release := func() {
					for _, code := range c.Codes {
						delete(holder, code)
					}
				}
				if n%5 == 4 {
					// Released before the claim's row goes: once it is gone, another claim may take them.
					mu.Lock()
					release()
					mu.Unlock()
					if got, err := a.ReturnClaim(ctx, c); err != nil || got != int64(len(c.Codes)) {
						t.Errorf("hand back: %d of %d, %v", got, len(c.Codes), err)
					}
					continue
				}
				rel, err := a.FinishClaim(ctx, c, 0)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				release()
				for _, code := range rel.Codes {
					tombstoned[code]++
				}
				mu.Unlock()
			}
			t.Errorf("claimer %d did not run out of pastes in 200 claims", w)
		})
	}
	wg.Wait()

	if len(tombstoned) != expired {
		t.Errorf("%d pastes tombstoned, want every expired one, %d", len(tombstoned), expired)
	}
	for code, n := range tombstoned {
		if n != 1 {
			t.Errorf("%s tombstoned %d times", code, n)
		}
	}
	if n := storetest.Count(t, a.Pool(), `SELECT count(*) FROM cleanup_claims`); n != 0 {
		t.Errorf("%d claims left", n)
	}
	refCountsExact(t, a)
}

// TestClaimLeavesPastesAsTheyAre: a claim writes nothing to the pastes it takes (no new row
// version, no lock left behind), they read as expired, and they count in flight rather than
// waiting until the claim's finish.
func TestClaimLeavesPastesAsTheyAre(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if err := storetest.Load(ctx, s.Pool(), storetest.SeedSpec{Pastes: 400, Expired: 300, Tag: "L"}); err != nil {
		t.Fatal(err)
	}
	const versions = `SELECT string_agg(short_code || ctid::text || xmin::text, ',' ORDER BY short_code) FROM pastes`
	var before, after string
	if err := s.Pool().QueryRow(ctx, versions).Scan(&before); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimExpired(ctx, 200, time.Time{})
	if err != nil || len(c.Codes) != 200 {
		t.Fatalf("claim: %d, %v", len(c.Codes), err)
	}
	if err := s.Pool().QueryRow(ctx, versions).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Error("the claim wrote new versions of pastes")
	}
	b, err := s.Backlog(ctx)
	if err != nil || b.Expired != 100 || b.InProgress != 200 {
		t.Errorf("backlog %+v (%v), want 100 waiting and 200 in flight", b, err)
	}
	if _, err := s.Paste(ctx, c.Codes[0]); err == nil {
		t.Error("a claimed paste was served")
	}
	rel, err := s.FinishClaim(ctx, c, 0)
	if err != nil || len(rel.Codes) != 200 {
		t.Fatalf("finish: %d, %v", len(rel.Codes), err)
	}
	if again, err := s.FinishClaim(ctx, c, 0); err != nil || len(again.Codes) != 0 {
		t.Errorf("a second finish of the claim tombstoned %d (%v), want nothing", len(again.Codes), err)
	}
	refCountsExact(t, s)
}

// TestWatchdogReturnsOlderVersionsClaims: a replica of the version before claims moved pastes to
// DELETION_IN_PROGRESS. During a rolling upgrade such a replica can die holding some; the watchdog
// returns them to the queue, and the next claim cleans them once.
func TestWatchdogReturnsOlderVersionsClaims(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if err := storetest.Load(ctx, s.Pool(), storetest.SeedSpec{Pastes: 200, Expired: 100, Tag: "V"}); err != nil {
		t.Fatal(err)
	}
	exec(t, s, `UPDATE pastes SET status = 'DELETION_IN_PROGRESS', deletion_initiated_at = now() - interval '1 hour'
		WHERE short_code IN (SELECT short_code FROM pastes WHERE expires_at <= now() LIMIT 40)`)
	if c, err := s.ClaimExpired(ctx, 1000, time.Time{}); err != nil || len(c.Codes) != 60 {
		t.Fatalf("claim beside the older claim: %d, %v; want the other 60", len(c.Codes), err)
	} else if _, err := s.FinishClaim(ctx, c, 0); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ResetStuck(ctx, 10*time.Minute, 1000); err != nil || n != 40 {
		t.Fatalf("the watchdog returned %d (%v), want the older claim's 40", n, err)
	}
	c, err := s.ClaimExpired(ctx, 1000, time.Time{})
	if err != nil || len(c.Codes) != 40 {
		t.Fatalf("claim after the watchdog: %d, %v; want 40", len(c.Codes), err)
	}
	if rel, err := s.FinishClaim(ctx, c, 0); err != nil || len(rel.Codes) != 40 {
		t.Fatalf("finish: %d, %v", len(rel.Codes), err)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM tombstones`); n != 100 {
		t.Errorf("%d tombstones, want 100", n)
	}
	refCountsExact(t, s)
}
