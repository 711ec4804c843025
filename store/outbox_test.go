package store_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestAbandonedUploadsHeld: the upload of a failed create waits in the outbox for the grace period,
// whether or not its create committed after all: the blob deleter does not take it, and neither the
// outbox's age nor fsck's "named by a content row" counts it. Once the hold is over, an upload nothing
// names is handed out, and one whose create committed is dropped from the outbox, its blob kept. A
// release of such content meanwhile makes its entry an ordinary one, due as any freed blob.
func TestAbandonedUploadsHeld(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	committed := newPaste(t, s, "committed after all") // its create failed in the client's eyes only
	released := newPaste(t, s, "committed, then deleted")
	keys := []string{"blobs/never-committed", committed.BlobKey, released.BlobKey}
	if err := s.EnqueueAbandonedUploads(ctx, keys); err != nil {
		t.Fatal(err)
	}
	if got := claimAll(t, s); len(got) != 0 {
		t.Fatalf("the blob deleter took %v during the hold, want nothing", got)
	}
	st, err := s.OutboxStatus(ctx, 5, 10)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size != 3 || st.Held != 3 || st.Named != 0 || st.OldestAge != 0 {
		t.Errorf("outbox status during the hold %+v, want 3 held, none named, no age", st)
	}
	if b, err := s.Backlog(ctx); err != nil || b.Outbox != 3 || !b.OutboxOldest.IsZero() {
		t.Errorf("backlog during the hold: %d in the outbox, oldest %v (%v); want 3 and none due", b.Outbox, b.OutboxOldest, err)
	}

	rel, err := s.DeletePaste(ctx, released.Code, "t")
	if err != nil || !slices.Equal(rel.BlobKeys, []string{released.BlobKey}) {
		t.Fatalf("delete of the last paste of held content: freed %v (%v), want its blob", rel.BlobKeys, err)
	}
	exec(t, s, `UPDATE blob_deletions SET next_attempt = now() WHERE blob_key = $1`, released.BlobKey) // the worker's lease is over
	if got := claimAll(t, s); !slices.Equal(got, []string{released.BlobKey}) {
		t.Errorf("after the release, the blob deleter took %v, want %s", got, released.BlobKey)
	}

	exec(t, s, `UPDATE blob_deletions SET not_before = now(), next_attempt = now() WHERE not_before IS NOT NULL`) // the hold is over
	if got := claimAll(t, s); !slices.Equal(got, []string{"blobs/never-committed"}) {
		t.Errorf("after the hold, the blob deleter took %v, want only the upload nothing names", got)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM blob_deletions WHERE blob_key = $1`, committed.BlobKey); n != 0 {
		t.Errorf("the upload whose create committed is still in the outbox after the hold")
	}
	if _, err := s.Paste(ctx, committed.Code); err != nil {
		t.Errorf("the paste whose create committed after all: %v", err)
	}
}

func claimAll(t *testing.T, s *store.Store) []string {
	t.Helper()
	keys, err := s.ClaimBlobDeletions(context.Background(), 100, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// TestCleanupBatchOutboxRow: the blobs a cleanup batch frees wait in one row of the outbox, due after
// the worker's lease, which the outbox's readers count as its keys: the backlog, fsck's status, the
// sweeper's check of what is tracked. The worker's settling of the row keeps the keys S3 refused,
// deferred with their error, and nothing else. A row whose worker died is spilled, once it is due,
// into keys the blob deleter hands out.
func TestCleanupBatchOutboxRow(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	finish := func(n int, tag string) store.Released {
		t.Helper()
		if err := storetest.Load(ctx, s.Pool(), storetest.SeedSpec{Pastes: n, Expired: n, Tag: tag}); err != nil {
			t.Fatal(err)
		}
		c, err := s.ClaimExpired(ctx, 1000, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		rel, err := s.FinishClaim(ctx, c, time.Hour) // the worker's lease: not due before it settles
		if err != nil || rel.Batch == 0 || len(rel.BlobKeys) != n {
			t.Fatalf("finish: %d keys in row %d (%v), want %d in a row of their own", len(rel.BlobKeys), rel.Batch, err, n)
		}
		return rel
	}
	rel := finish(30, "X")
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM blob_deletions`); n != 0 {
		t.Errorf("%d rows of blob_deletions, want the batch's keys in one row of their own", n)
	}
	b, err := s.Backlog(ctx)
	st, err2 := s.OutboxStatus(ctx, 5, 10)
	if err != nil || err2 != nil || b.Outbox != 30 || st.Size != 30 {
		t.Errorf("backlog's outbox %d, fsck's %d (%v, %v); want the batch's 30 keys", b.Outbox, st.Size, err, err2)
	}
	if untracked, err := s.UntrackedBlobKeys(ctx, rel.BlobKeys); err != nil || len(untracked) != 0 {
		t.Errorf("the sweeper would take %d of the batch's keys for orphans (%v)", len(untracked), err)
	}
	if got := claimAll(t, s); len(got) != 0 {
		t.Errorf("the blob deleter took %d keys of a batch its worker still holds", len(got))
	}

	refused := rel.BlobKeys[3]
	if err := s.SettleBlobBatch(ctx, rel.Batch, map[string]string{refused: "SlowDown"}); err != nil {
		t.Fatal(err)
	}
	var key, lastError string
	var due time.Time
	if err := s.Pool().QueryRow(ctx, `SELECT blob_key, last_error, next_attempt FROM blob_outbox`).Scan(&key, &lastError, &due); err != nil {
		t.Fatalf("the outbox after settling: %v, want the refused key alone", err)
	}
	if key != refused || lastError != "SlowDown" || !due.After(time.Now().Add(-time.Minute)) {
		t.Errorf("the outbox after settling: %s (%q, due %v), want %s deferred with its error", key, lastError, due, refused)
	}

	died := finish(20, "Y") // its worker dies before it settles: the row comes due
	exec(t, s, `UPDATE blob_deletion_batches SET next_attempt = now() WHERE id = $1`, died.Batch)
	exec(t, s, `UPDATE blob_deletions SET next_attempt = now()`)
	if got, want := claimAll(t, s), slices.Sorted(slices.Values(append(died.BlobKeys, refused))); !slices.Equal(got, want) {
		t.Errorf("the blob deleter took %d keys, want the dead worker's %d and the refused one", len(got), len(died.BlobKeys))
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM blob_deletion_batches`); n != 0 {
		t.Errorf("%d batch rows left after the spill", n)
	}
}
