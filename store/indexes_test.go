package store_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"pastebin/store"
	"pastebin/store/storetest"
)

// explain returns the plan PostgreSQL chooses for query.
func explain(t *testing.T, s *store.Store, query string, args ...any) string {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// TestPartialIndexesUsed: on 60,000 pastes the claim reads idx_cleanup_expired, the watchdog
// idx_watchdog_stuck and the tombstone purge idx_tombstone_purge; without those indexes the planner
// scans the table instead.
func TestPartialIndexesUsed(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if _, err := storetest.Seed(ctx, s.Pool(), storetest.SeedSpec{Pastes: 60000, Expired: 3000, Shared: 0.3, Tag: "I"}); err != nil {
		t.Fatal(err)
	}
	done, err := s.ClaimExpired(ctx, 1000, nil) // tombstones for the purge
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishClaim(ctx, done, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimExpired(ctx, 500, nil); err != nil { // some rows in flight for the watchdog
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, "ANALYZE pastes"); err != nil {
		t.Fatal(err)
	}
	plan := map[string]func() string{
		"idx_cleanup_expired": func() string { return explain(t, s, store.ClaimSQL, 1000) },
		"idx_watchdog_stuck":  func() string { return explain(t, s, store.ResetStuckSQL, 10*time.Minute, 1000) },
		"idx_tombstone_purge": func() string { return explain(t, s, store.PurgeSQL, time.Duration(0), 1000) },
	}
	for index, explain := range plan {
		if p := explain(); !strings.Contains(p, index) {
			t.Errorf("the plan does not use %s:\n%s", index, p)
		}
	}
	// The same queries without the partial indexes: the table is big enough that they would scan it.
	if _, err := s.Pool().Exec(ctx, "DROP INDEX idx_cleanup_expired, idx_watchdog_stuck, idx_tombstone_purge"); err != nil {
		t.Fatal(err)
	}
	for index, explain := range plan {
		if p := explain(); !strings.Contains(p, "Seq Scan on pastes") {
			t.Errorf("without %s the plan does not scan pastes:\n%s", index, p)
		}
	}
}
