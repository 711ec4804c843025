package store_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestRestrictRefusesWrongRefCount: with a ref_count too low by one, the release of what the
// ref_count says is the last reference tries to delete content another paste still points at.
// ON DELETE RESTRICT refuses it, and the whole transaction goes: the delete, a cleanup batch, no
// tombstone, no decrement, no outbox entry. A wrong count never loses a live paste's bytes.
func TestRestrictRefusesWrongRefCount(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	h := sha256.Sum256([]byte("shared bytes"))
	np := store.NewPaste{ContentHash: h[:], Size: 12, OwnerTokenHash: store.HashToken("t")}
	a, err := s.CreatePasteWithBlob(ctx, np, "blobs/fk/1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreatePasteShared(ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, s, `UPDATE content SET ref_count = 1`)

	_, err = s.DeletePaste(ctx, a.Code, "t")
	wantRestrictViolation(t, "owner delete", err)
	exec(t, s, `UPDATE pastes SET expires_at = now() WHERE short_code = $1`, b.Code)
	claim, err := s.ClaimExpired(ctx, 10, time.Time{})
	if err != nil || len(claim.Codes) != 1 {
		t.Fatalf("claim: %v, %d", err, len(claim.Codes))
	}
	_, err = s.FinishClaim(ctx, claim, 0)
	wantRestrictViolation(t, "cleanup batch", err)

	got := storetest.Count(t, s.Pool(), `SELECT count(*) FROM tombstones`) +
		10*storetest.Count(t, s.Pool(), `SELECT count(*) FROM blob_outbox`)
	if got != 0 {
		t.Errorf("a refused transaction left tombstones or outbox entries")
	}
	if n := storetest.Count(t, s.Pool(), `SELECT ref_count FROM content`); n != 1 {
		t.Errorf("ref_count %d after the refused transactions, want the 1 they found", n)
	}
}

func wantRestrictViolation(t *testing.T, what string, err error) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23503" {
		t.Errorf("%s with a ref_count too low: %v, want a foreign key violation", what, err)
	}
}

// TestRestrictCheckUsesContentHashIndex: freeing content makes PostgreSQL look for pastes still
// pointing at it (the ON DELETE RESTRICT check). On 60,000 pastes that lookup reads
// idx_pastes_content_hash; without the index it scans the whole table, once per freed row.
func TestRestrictCheckUsesContentHashIndex(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if _, err := storetest.Seed(ctx, s.Pool(), storetest.SeedSpec{Pastes: 60000, Expired: 10, Shared: 0, Tag: "R"}); err != nil {
		t.Fatal(err)
	}
	exec(t, s, `ANALYZE pastes`)
	idx, seq := freeOneContent(t, s)
	if idx < 1 || seq != 0 {
		t.Errorf("freeing a content row: %d index scans of idx_pastes_content_hash, %d scans of pastes; want at least 1 and 0", idx, seq)
	}
	exec(t, s, `DROP INDEX idx_pastes_content_hash`)
	if _, seq := freeOneContent(t, s); seq < 1 {
		t.Errorf("without the index, freeing a content row scanned pastes %d times, want at least once", seq)
	}
}

// freeOneContent releases the only reference of one content row and deletes the row, as a cleanup
// batch does, and returns the index scans of idx_pastes_content_hash and the sequential scans of
// pastes it caused.
func freeOneContent(t *testing.T, s *store.Store) (idxScans, seqScans int) {
	t.Helper()
	ctx := context.Background()
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	before := scans(t, conn.Conn())
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// The backend then flushes its statistics when it goes idle after the commit, before it answers.
		if _, err := tx.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			return err
		}
		var code string
		var hash []byte
		err := tx.QueryRow(ctx, `SELECT short_code, content_hash FROM pastes
			WHERE status = 'NOT_EXPIRED' AND expires_at <= now() LIMIT 1`).Scan(&code, &hash)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM pastes WHERE short_code = $1`, code)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM content WHERE content_hash = $1`, hash)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	after := scans(t, conn.Conn())
	return after[0] - before[0], after[1] - before[1]
}

func scans(t *testing.T, conn *pgx.Conn) [2]int {
	t.Helper()
	var n [2]int
	err := conn.QueryRow(context.Background(), `
		SELECT coalesce((SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'idx_pastes_content_hash'), 0),
		       (SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'pastes')`).Scan(&n[0], &n[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}
