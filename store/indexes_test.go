package store_test

import (
	"context"
	"encoding/json"
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
// idx_watchdog_stuck and the tombstone purge idx_tombstones_deleted_at; without those indexes the
// planner scans the tables instead.
func TestPartialIndexesUsed(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if _, err := storetest.Seed(ctx, s.Pool(), storetest.SeedSpec{Pastes: 60000, Expired: 3000, Shared: 0.3, Tag: "I"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO tombstones (short_code, owner_token_hash, deleted_reason)
		SELECT 'T' || lpad(i::text, 10, '0'), sha256('t'::bytea), 'owner' FROM generate_series(1, 20000) AS i`); err != nil {
		t.Fatal(err) // tombstones for the purge: enough that scanning them costs more than the index
	}
	done, err := s.ClaimExpired(ctx, 1000, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishClaim(ctx, done, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimExpired(ctx, 500, time.Time{}); err != nil { // some rows in flight for the watchdog
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, "ANALYZE pastes, tombstones"); err != nil {
		t.Fatal(err)
	}
	type query struct {
		table string
		plan  func() string
	}
	plan := map[string]query{
		"idx_cleanup_expired":       {"pastes", func() string { return explain(t, s, store.ClaimSQL, 1000, time.Time{}) }},
		"idx_watchdog_stuck":        {"pastes", func() string { return explain(t, s, store.ResetStuckSQL, 10*time.Minute, 1000) }},
		"idx_tombstones_deleted_at": {"tombstones", func() string { return explain(t, s, store.PurgeSQL, time.Duration(0), 1000) }},
	}
	for index, q := range plan {
		if p := q.plan(); !strings.Contains(p, index) {
			t.Errorf("the plan does not use %s:\n%s", index, p)
		}
	}
	// The same queries without the indexes: the tables are big enough that they would scan them.
	if _, err := s.Pool().Exec(ctx, "DROP INDEX idx_cleanup_expired, idx_watchdog_stuck, idx_tombstones_deleted_at"); err != nil {
		t.Fatal(err)
	}
	for index, q := range plan {
		if p := q.plan(); !strings.Contains(p, "Seq Scan on "+q.table) {
			t.Errorf("without %s the plan does not scan %s:\n%s", index, q.table, p)
		}
	}
}

// TestClaimStartsPastDeadEntries: every cleaned row leaves a dead entry at the front of
// idx_cleanup_expired until VACUUM. A claim that starts where the last one ended reads a few index
// pages; one from the front reads every dead entry's page too.
func TestClaimStartsPastDeadEntries(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if _, err := storetest.Seed(ctx, s.Pool(), storetest.SeedSpec{Pastes: 60000, Expired: 30000, Shared: 0.3, Tag: "D"}); err != nil {
		t.Fatal(err)
	}
	// The dead entries must still be there when the claims are measured: 20,000 cleaned rows pass
	// autovacuum's threshold for this table, and a vacuum in between would remove them.
	if _, err := s.Pool().Exec(ctx, "ALTER TABLE pastes SET (autovacuum_enabled = false)"); err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for range 20 {
		c, err := s.ClaimExpired(ctx, 1000, last)
		if err != nil || len(c.Codes) != 1000 {
			t.Fatalf("claim: %v, %d rows", err, len(c.Codes))
		}
		if _, err := s.FinishClaim(ctx, c, 0); err != nil {
			t.Fatal(err)
		}
		last = c.Last
	}
	front, past := claimIndexPages(t, s, time.Time{}), claimIndexPages(t, s, last)
	t.Logf("pages read by a claim from the front: %d; from the last claim's end: %d", front, past)
	if past*4 > front {
		t.Errorf("a claim from the last one's end read %d index pages, from the front %d: want a quarter or less", past, front)
	}
}

// claimIndexPages returns the pages of idx_cleanup_expired a claim from from reads (the claim is
// rolled back).
func claimIndexPages(t *testing.T, s *store.Store, from time.Time) int {
	t.Helper()
	ctx := context.Background()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var plan string
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+store.ClaimSQL, 1000, from).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var nodes []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(plan), &nodes); err != nil {
		t.Fatal(err)
	}
	return nodes[0].Plan.indexPages("idx_cleanup_expired")
}

// planNode is a node of a JSON plan, with the buffers it read.
type planNode struct {
	Index string     `json:"Index Name"`
	Hit   int        `json:"Shared Hit Blocks"`
	Read  int        `json:"Shared Read Blocks"`
	Plans []planNode `json:"Plans"`
}

// indexPages returns the pages the scan of index under n read (with the heap pages it visited).
func (n planNode) indexPages(index string) int {
	if n.Index == index {
		return n.Hit + n.Read
	}
	for _, c := range n.Plans {
		if p := c.indexPages(index); p > 0 {
			return p
		}
	}
	return 0
}
