package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"pastebin/store"
	"pastebin/store/storetest"
)

func hashOf(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// newPaste creates a paste on content as the API does, without S3: fsck's SQL never reads S3.
func newPaste(t *testing.T, s *store.Store, content string) store.Paste {
	t.Helper()
	ctx := context.Background()
	np := store.NewPaste{ContentHash: hashOf(content), Size: int64(len(content)), OwnerTokenHash: store.HashToken("t")}
	p, err := s.CreatePasteShared(ctx, np)
	if err == store.ErrNoContent {
		p, err = s.CreatePasteWithBlob(ctx, np, "blobs/"+hex.EncodeToString(np.ContentHash)+".test")
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func exec(t *testing.T, s *store.Store, query string, args ...any) {
	t.Helper()
	if _, err := s.Pool().Exec(context.Background(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// TestCheckRefCounts: the snapshot check finds exactly the rows the independent audit finds, and
// pastes left without content when the constraints that forbid them are gone.
func TestCheckRefCounts(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if _, err := storetest.Seed(ctx, s.Pool(), storetest.SeedSpec{Pastes: 3000, Shared: 0.4, Tag: "F"}); err != nil {
		t.Fatal(err)
	}
	rc, err := s.CheckRefCounts(ctx)
	if err != nil || len(rc.Anomalies) != 0 || rc.Pastes != 3000 || rc.LiveWithoutContent != 0 {
		t.Fatalf("consistent seed: %+v, %v; want 3000 pastes and nothing wrong", rc, err)
	}
	exec(t, s, `UPDATE content SET ref_count = ref_count + 2 WHERE blob_key IN (SELECT blob_key FROM content ORDER BY blob_key LIMIT 3)`)
	exec(t, s, `UPDATE content SET ref_count = 1 WHERE ref_count > 2 AND blob_key = (SELECT max(blob_key) FROM content WHERE ref_count > 2)`)
	exec(t, s, `INSERT INTO content (content_hash, blob_key, size_bytes, ref_count) VALUES ($1, 'blobs/zero', 1, 0)`, hashOf("zero"))
	want := storetest.Check(t, s.Pool(), nil)
	rc, err = s.CheckRefCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got, gotZero []string
	for _, a := range rc.Anomalies {
		if a.RefCount == 0 {
			gotZero = append(gotZero, a.BlobKey)
			continue
		}
		got = append(got, fmt.Sprintf("%s: ref_count %d, pastes %d", a.Hash, a.RefCount, a.Pastes))
	}
	slices.Sort(got)
	if diff := cmp.Diff(want.RefMismatches, got); diff != "" || len(got) != 4 {
		t.Errorf("mismatches (-audit +fsck), want 4:\n%s", diff)
	}
	if diff := cmp.Diff(want.Unreferenced, gotZero); diff != "" {
		t.Errorf("rows at 0 (-audit +fsck):\n%s", diff)
	}

	// Constraints are what make a live paste without content impossible; without them fsck sees it.
	exec(t, s, `ALTER TABLE pastes DROP CONSTRAINT pastes_content_hash_fkey`)
	exec(t, s, `UPDATE pastes SET content_hash = $1 WHERE short_code = 'F0000000001'`, hashOf("nowhere"))
	if rc, err = s.CheckRefCounts(ctx); err != nil || rc.LiveWithoutContent != 1 {
		t.Errorf("live without content: %d, %v; want 1", rc.LiveWithoutContent, err)
	}
}

// TestRepairWaitsForCreate: a create holding the content row's lock, its paste inserted but not
// committed, makes the repair wait; the repair's recount then includes that paste. Had the count
// been taken in the same statement as the lock, or before it, it would miss the paste and leave the
// row one short after the create commits.
func TestRepairWaitsForCreate(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	p := newPaste(t, s, "hot")
	newPaste(t, s, "hot")
	exec(t, s, `UPDATE content SET ref_count = 7 WHERE content_hash = $1`, p.ContentHash) // 2 pastes, wrong

	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	createInTx(t, tx, p.ContentHash, "Xcreating01")
	repaired := make(chan []store.RefRepair, 1)
	go func() {
		fixed, err := s.RepairRefCounts(ctx, [][]byte{p.ContentHash})
		if err != nil {
			t.Error(err)
		}
		repaired <- fixed
	}()
	waitForLockWait(t, s)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-repaired
	want := []store.RefRepair{{Hash: p.ContentHash, BlobKey: p.BlobKey, Was: 8, Now: 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("repair (-want +got):\n%s", diff)
	}
	refsExact(t, s)
}

// TestRepairDuringTombstone: a delete that tombstoned its paste but has not yet decremented
// (its statement waits for the row the repair locked) is counted as still holding its reference,
// and its decrement lands on the repaired value: exact once both commit.
func TestRepairDuringTombstone(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	p := newPaste(t, s, "going")
	newPaste(t, s, "going")
	exec(t, s, `UPDATE content SET ref_count = 5 WHERE content_hash = $1`, p.ContentHash)

	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `WITH gone AS (DELETE FROM pastes WHERE short_code = $1 RETURNING short_code, owner_token_hash)
		INSERT INTO tombstones (short_code, owner_token_hash, deleted_reason) SELECT short_code, owner_token_hash, 'owner' FROM gone`, p.Code)
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := s.RepairRefCounts(ctx, [][]byte{p.ContentHash})
	if err != nil || len(fixed) != 1 || fixed[0].Now != 2 {
		t.Fatalf("repair during the tombstone: %+v, %v; want 5 -> 2", fixed, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE content SET ref_count = ref_count - 1 WHERE content_hash = $1`, p.ContentHash); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	refsExact(t, s)
}

// TestRepairFreesUnreferenced: a row whose pastes are all gone is deleted and its blob queued, as the
// release of its last reference would have; a row already right is left alone.
func TestRepairFreesUnreferenced(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	right := newPaste(t, s, "right")
	exec(t, s, `INSERT INTO content (content_hash, blob_key, size_bytes, ref_count) VALUES ($1, 'blobs/leaked', 6, 3)`, hashOf("leaked"))
	fixed, err := s.RepairRefCounts(ctx, [][]byte{right.ContentHash, hashOf("leaked"), hashOf("unknown")})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.RefRepair{{Hash: hashOf("leaked"), BlobKey: "blobs/leaked", Was: 3, Now: 0, Freed: true}}
	if diff := cmp.Diff(want, fixed); diff != "" {
		t.Errorf("repair (-want +got):\n%s", diff)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM blob_deletions WHERE blob_key = 'blobs/leaked'`); n != 1 {
		t.Errorf("leaked blob queued %d times, want 1", n)
	}
	refsExact(t, s)
}

// TestOutboxStatus: size, the oldest entry's age by the database's clock, and struggling entries.
func TestOutboxStatus(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	exec(t, s, `INSERT INTO blob_deletions (blob_key, enqueued_at, attempts, last_error) VALUES
		('blobs/a', now() - interval '2 hours', 9, 'AccessDenied'), ('blobs/b', now(), 0, '')`)
	st, err := s.OutboxStatus(context.Background(), 5, 10)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size != 2 || st.Retrying != 1 || len(st.Struggling) != 1 || st.Struggling[0].LastError != "AccessDenied" {
		t.Errorf("outbox status %+v", st)
	}
	if age := time.Duration(st.OldestAge * float64(time.Second)); age < 2*time.Hour || age > 2*time.Hour+time.Minute {
		t.Errorf("oldest age %s, want 2h", age)
	}
}

// refsExact checks invariant 1 with the independent audit; these tests have no bucket.
func refsExact(t *testing.T, s *store.Store) {
	t.Helper()
	a := storetest.Check(t, s.Pool(), nil)
	if len(a.RefMismatches) > 0 || len(a.Unreferenced) > 0 {
		t.Errorf("invariant 1: mismatches %v, rows at 0 %v", a.RefMismatches, a.Unreferenced)
	}
}

// createInTx does what a create does in its transaction: take the reference, then insert the paste.
func createInTx(t *testing.T, tx pgx.Tx, hash []byte, code string) {
	t.Helper()
	ctx := context.Background()
	if _, err := tx.Exec(ctx, `UPDATE content SET ref_count = ref_count + 1 WHERE content_hash = $1`, hash); err != nil {
		t.Fatal(err)
	}
	_, err := tx.Exec(ctx, `INSERT INTO pastes (short_code, content_hash, owner_token_hash) VALUES ($1, $2, $3)`,
		code, hash, store.HashToken("t"))
	if err != nil {
		t.Fatal(err)
	}
}

// waitForLockWait waits until some session of this database waits for a row lock.
func waitForLockWait(t *testing.T, s *store.Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`)
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the repair never waited for the create's lock")
}
