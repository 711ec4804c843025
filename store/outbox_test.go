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
