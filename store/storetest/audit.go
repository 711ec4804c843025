package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Audit is what the database and a listing of the bucket say about invariants 1 to 3 (docs/design.md, "Invariants").
// Tests compute it independently of the code under test: plain SQL and the bucket's own listing.
type Audit struct {
	RefMismatches  []string // invariant 1: content rows whose ref_count is not the number of pastes on them
	MissingBlobs   []string // invariant 2: blob keys of content rows that are not in the bucket
	UntrackedBlobs []string // invariant 3: objects neither a content row nor the outbox names (leaks)
	Outbox         []string // blob keys waiting for deletion
	LiveWithout    int      // invariant 2: pastes (live or claimed; tombstones are rows of their own) without a content row
	Unreferenced   []string // content rows at ref_count 0: the transaction that freed them should have deleted them
}

// Check returns the audit of the database behind pool against bucketKeys, the listing of its bucket.
func Check(t testing.TB, pool *pgxpool.Pool, bucketKeys []string) Audit {
	t.Helper()
	ctx := context.Background()
	var a Audit
	a.RefMismatches = queryStrings(t, pool, `
		SELECT encode(c.content_hash, 'hex') || ': ref_count ' || c.ref_count || ', pastes ' || count(p.short_code)
		FROM content c LEFT JOIN pastes p ON p.content_hash = c.content_hash
		GROUP BY c.content_hash, c.ref_count
		HAVING c.ref_count <> count(p.short_code)`)
	a.Unreferenced = queryStrings(t, pool, `SELECT blob_key FROM content WHERE ref_count = 0`)
	contentKeys := queryStrings(t, pool, `SELECT blob_key FROM content`)
	a.Outbox = queryStrings(t, pool, `SELECT blob_key FROM blob_outbox`)
	inBucket := map[string]bool{}
	for _, k := range bucketKeys {
		inBucket[k] = true
	}
	known := map[string]bool{}
	for _, k := range contentKeys {
		known[k] = true
		if !inBucket[k] {
			a.MissingBlobs = append(a.MissingBlobs, k)
		}
	}
	for _, k := range a.Outbox {
		known[k] = true
	}
	for _, k := range bucketKeys {
		if !known[k] {
			a.UntrackedBlobs = append(a.UntrackedBlobs, k)
		}
	}
	err := pool.QueryRow(ctx, `SELECT count(*) FROM pastes p LEFT JOIN content c USING (content_hash)
		WHERE c.content_hash IS NULL`).Scan(&a.LiveWithout)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Consistent fails the test unless invariants 1 and 2 hold exactly and nothing leaked.
func (a Audit) Consistent(t testing.TB) {
	t.Helper()
	if len(a.RefMismatches) > 0 {
		t.Errorf("invariant 1: %d ref_count mismatches, e.g. %v", len(a.RefMismatches), first(a.RefMismatches))
	}
	if len(a.MissingBlobs) > 0 || a.LiveWithout > 0 {
		t.Errorf("invariant 2: %d content blobs missing from the bucket (e.g. %v), %d live pastes without content",
			len(a.MissingBlobs), first(a.MissingBlobs), a.LiveWithout)
	}
	if len(a.Unreferenced) > 0 {
		t.Errorf("%d content rows left at ref_count 0, e.g. %v", len(a.Unreferenced), first(a.Unreferenced))
	}
	if len(a.UntrackedBlobs) > 0 {
		t.Errorf("invariant 3: %d objects in the bucket that no content row or outbox entry names, e.g. %v",
			len(a.UntrackedBlobs), first(a.UntrackedBlobs))
	}
}

func first(s []string) []string { return s[:min(3, len(s))] }

func queryStrings(t testing.TB, pool *pgxpool.Pool, query string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	slices.Sort(out)
	return out
}

// Count runs a query that returns one number, such as a count(*).
func Count(t testing.TB, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
