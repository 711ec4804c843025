package store_test

import (
	"context"
	"log/slog"
	"testing"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestClaimInHeapOrder: claims in heap order take expired live rows page after page, each from
// where the last one ended: never a row twice, never a live one, every expired one once; past the
// last expired row, a claim takes nothing. The estimate that decides the order sees the backlog's
// share of the table. Claims stop at the heap's size they were given (the run's start): pastes on
// pages added since are not theirs.
func TestClaimInHeapOrder(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if err := storetest.Load(ctx, s.Pool(), storetest.SeedSpec{Pastes: 4000, Expired: 1000, Shared: 0.3, Tag: "O"}); err != nil {
		t.Fatal(err)
	}
	exec(t, s, `ANALYZE pastes`)
	expired, rows, err := s.BacklogEstimate(ctx)
	if err != nil || expired < 800 || expired > 1200 || rows < 3600 || rows > 4400 {
		t.Errorf("backlog estimate %.0f of %.0f rows (%v), want about 1000 of 4000", expired, rows, err)
	}
	pages, err := s.HeapPages(ctx)
	if err != nil || pages == 0 {
		t.Fatalf("heap pages: %d, %v", pages, err)
	}
	// Pastes that expired after the run began sit on pages added since: claims in heap order stop
	// at the heap's size when the run began, and leave them to claims in expiry order.
	if err := storetest.Load(ctx, s.Pool(), storetest.SeedSpec{Pastes: 300, Expired: 300, Tag: "Q"}); err != nil {
		t.Fatal(err)
	}
	const beyond = `SELECT count(*) FROM pastes WHERE short_code LIKE 'Q%' AND status = 'NOT_EXPIRED' AND (ctid::text::point)[0] >= $1`
	late := storetest.Count(t, s.Pool(), beyond, int64(pages))
	if late == 0 {
		t.Fatal("no late paste on a page past the heap's size: the test sees nothing")
	}
	seen := map[string]bool{}
	var from store.HeapPosition
	for claims := 0; ; claims++ {
		c, err := s.ClaimExpiredInHeapOrder(ctx, 300, from, pages)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Codes) == 0 {
			break
		}
		if c.Next.Page < from.Page || (c.Next.Page == from.Page && c.Next.Line <= from.Line) || claims > 10 {
			t.Fatalf("claim %d went from %+v to %+v", claims, from, c.Next)
		}
		for _, code := range c.Codes {
			if seen[code] {
				t.Fatalf("%s claimed twice", code)
			}
			seen[code] = true
		}
		from = c.Next
	}
	if want := 1000 + 300 - late; len(seen) != want {
		t.Errorf("claimed %d rows in heap order, want the 1000 expired and the %d late ones within the heap's first pages", len(seen), 300-late)
	}
	if n := storetest.Count(t, s.Pool(), beyond, int64(pages)); n != late {
		t.Errorf("%d of the %d late pastes past page %d left, want all: claims in heap order went past the heap's size", n, late, pages)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM pastes WHERE expires_at > now() AND short_code IN (SELECT unnest(codes) FROM cleanup_claims)`); n != 0 {
		t.Errorf("%d live pastes claimed", n)
	}
}
