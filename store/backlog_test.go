package store_test

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestBacklogEstimatesPastItsCount: Backlog counts waiting pastes one by one only up to
// store.BacklogCounted; past it, the planner's estimate stands in for the rest, so a heavy day's
// backlog reads as what it is, not as the count's cap.
func TestBacklogEstimatesPastItsCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	const expired = store.BacklogCounted * 6 / 5
	if err := storetest.Load(ctx, s.Pool(), storetest.SeedSpec{Pastes: expired + 10_000, Expired: expired, Shared: 0.4, Tag: "B"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE pastes`); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimExpired(ctx, 1000, time.Time{})
	if err != nil || len(c.Codes) != 1000 {
		t.Fatalf("claim: %d, %v", len(c.Codes), err)
	}
	b, err := s.Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.InProgress != 1000 {
		t.Errorf("in flight %d, want the claim's 1000", b.InProgress)
	}
	want := float64(expired - 1000)
	if b.Expired <= store.BacklogCounted || math.Abs(float64(b.Expired)-want) > want/10 {
		t.Errorf("backlog reads %d waiting, want about %.0f (within 10%%), more than the %d counted one by one",
			b.Expired, want, store.BacklogCounted)
	}
}
