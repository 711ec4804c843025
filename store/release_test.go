package store_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestFinishMeetsConcurrentReferences: a batch's finish writes each content row once, without
// locking the rows first (store/release.go). Another transaction that changed a row of the batch
// and holds it is waited for, and the release is judged on the row as that one left it: a create
// that took another reference keeps the content (decremented, not deleted, the new paste's bytes
// still there), and an owner's delete that released the other reference lets the finish free it
// (deleted, its blob queued), never left at zero.
func TestFinishMeetsConcurrentReferences(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		pastes   int                                                                        // of the content; the first expires
		other    func(t *testing.T, tx pgx.Tx, s *store.Store, hash []byte, codes []string) // holds the row
		freed    bool                                                                       // the finish deletes the content
		refsLeft int
	}{
		{name: "a create takes a reference", pastes: 1, refsLeft: 1,
			other: func(t *testing.T, tx pgx.Tx, _ *store.Store, hash []byte, _ []string) {
				createInTx(t, tx, hash, "Xcreating01")
			}},
		{name: "a delete releases the other reference", pastes: 2, freed: true,
			other: func(t *testing.T, tx pgx.Tx, s *store.Store, hash []byte, codes []string) {
				deleteInTx(t, tx, hash, codes[1])
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := storetest.New(t, slog.New(slog.DiscardHandler))
			ctx := context.Background()
			content := "held by another transaction"
			codes := newContent(t, s, content, tc.pastes)
			exec(t, s, `UPDATE pastes SET expires_at = now() - interval '1 hour' WHERE short_code = $1`, codes[0])
			claim, err := s.ClaimExpired(ctx, 10, time.Time{})
			if err != nil || len(claim.Codes) != 1 {
				t.Fatalf("claim: %v, %v", claim.Codes, err)
			}

			tx, err := s.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			tc.other(t, tx, s, hashOf(content), codes)
			finished := make(chan store.Released, 1)
			go func() {
				rel, err := s.FinishClaim(ctx, claim, 0)
				if err != nil {
					t.Error(err)
				}
				finished <- rel
			}()
			waitForLockWait(t, s)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			rel := <-finished

			if len(rel.Codes) != 1 || (rel.FreedContent == 1) != tc.freed || (len(rel.BlobKeys) == 1) != tc.freed {
				t.Errorf("finish: %+v; want the paste tombstoned and the content freed: %v", rel, tc.freed)
			}
			refs := storetest.Count(t, s.Pool(), `SELECT coalesce(sum(ref_count), 0) FROM content`)
			queued := storetest.Count(t, s.Pool(), `SELECT count(*) FROM blob_outbox`)
			if refs != tc.refsLeft || (queued == 1) != tc.freed {
				t.Errorf("%d references left, %d blobs queued; want %d, and the blob queued: %v", refs, queued, tc.refsLeft, tc.freed)
			}
			refCountsExact(t, s)
		})
	}
}

// deleteInTx does what an owner's delete does in its transaction: tombstone the paste, then
// release its reference.
func deleteInTx(t *testing.T, tx pgx.Tx, hash []byte, code string) {
	t.Helper()
	ctx := context.Background()
	_, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM pastes WHERE short_code = $1 RETURNING short_code, owner_token_hash)
		INSERT INTO tombstones (short_code, owner_token_hash, deleted_reason) SELECT short_code, owner_token_hash, 'owner' FROM gone`, code)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE content SET ref_count = ref_count - 1 WHERE content_hash = $1`, hash); err != nil {
		t.Fatal(err)
	}
}
