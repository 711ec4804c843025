package store_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"pastebin/store"
	"pastebin/store/storetest"
)

// tombstonesMigration is the migration that moved tombstones to a table of their own.
const tombstonesMigration = 50

// TestTombstonesMigrate: the tombstones kept in pastes before migration 00050 (rows in status
// DELETED) move to the tombstones table, and answer as before: 410 with their reason to readers,
// 204 to a retried delete with the right token, 403 with another. Rolled back, they are rows of
// pastes again.
func TestTombstonesMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := store.Open(ctx, storetest.NewDirectDatabase(t), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	live := newPaste(t, s, "kept")
	migrateBelow(t, s, tombstonesMigration)
	exec(t, s, `INSERT INTO pastes (short_code, content_hash, owner_token_hash, status, deleted_at, deleted_reason)
		VALUES ('Xdeleted001', NULL, $1, 'DELETED', now() - interval '1 day', 'legal')`, store.HashToken("owner"))
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}

	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM pastes`); n != 1 {
		t.Errorf("%d rows left in pastes, want the live one", n)
	}
	var gone *store.GoneError
	if _, err := s.Paste(ctx, "Xdeleted001"); !errors.As(err, &gone) || gone.Reason != store.ReasonLegal {
		t.Errorf("read of the moved tombstone: %v, want gone for %q", err, store.ReasonLegal)
	}
	if _, err := s.DeletePaste(ctx, "Xdeleted001", "someone else"); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("delete of the moved tombstone with another token: %v, want ErrForbidden", err)
	}
	if rel, err := s.DeletePaste(ctx, "Xdeleted001", "owner"); err != nil || len(rel.Codes) != 0 || rel.Reason != store.ReasonLegal {
		t.Errorf("retried delete of the moved tombstone: %+v, %v; want nothing done, its reason", rel, err)
	}
	if _, err := s.Paste(ctx, live.Code); err != nil {
		t.Errorf("read of the live paste: %v", err)
	}

	migrateBelow(t, s, tombstonesMigration)
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM pastes WHERE status = 'DELETED' AND deleted_reason = 'legal'`); n != 1 {
		t.Errorf("rolled back: %d tombstones in pastes, want the one", n)
	}
}

// migrateBelow rolls migrations back until the schema's version is below version.
func migrateBelow(t *testing.T, s *store.Store, version int64) {
	t.Helper()
	for {
		v, err := s.MigrateDown(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if v < version {
			return
		}
	}
}
