package store_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"pastebin/store"
	"pastebin/store/storetest"
)

// creatorKeysMigration is the migration that added creator keys.
const creatorKeysMigration = 53

var keyActor = store.Actor{Name: "test", Via: store.ViaAPI}

func newKey(t *testing.T, s *store.Store, label string) store.CreatorKey {
	t.Helper()
	k, err := s.CreateKey(context.Background(), hashOf("secret of "+label), label, "120/1m", keyActor)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newKeyedPaste(t *testing.T, s *store.Store, content string, key int64) (store.Paste, error) {
	t.Helper()
	np := store.NewPaste{ContentHash: hashOf(content), Size: int64(len(content)), OwnerTokenHash: store.HashToken("t"), CreatorKeyID: key}
	p, err := s.CreatePasteShared(context.Background(), np)
	if errors.Is(err, store.ErrNoContent) {
		p, err = s.CreatePasteWithBlob(context.Background(), np, "blobs/"+content+".test")
	}
	return p, err
}

// TestCreatorKeyLifecycle: a key creates and its pastes name it; revoked, its creates are refused
// and write nothing; a takedown by key removes its pastes only, releasing their references; every
// step is in the audit log.
func TestCreatorKeyLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t, slog.New(slog.DiscardHandler))
	k, other := newKey(t, s, "ci"), newKey(t, s, "other")
	shared := newPaste(t, s, "shared bytes") // no key
	var reported string
	for _, c := range []string{"one", "two", "shared bytes"} {
		p, err := newKeyedPaste(t, s, c, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		reported = p.Code
	}
	fileReport(t, s, reported, "receipt of a keyed paste")
	fileReport(t, s, shared.Code, "receipt of the keyless copy")
	kept, err := newKeyedPaste(t, s, "kept", other.ID)
	if err != nil {
		t.Fatal(err)
	}
	if found, err := s.KeyByHash(ctx, hashOf("secret of ci")); err != nil || found.ID != k.ID || found.LastUsedAt == nil {
		t.Fatalf("KeyByHash: %+v, %v", found, err)
	}
	if _, err := s.KeyByHash(ctx, hashOf("nobody's")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("KeyByHash of an unknown key: %v, want ErrNotFound", err)
	}
	list, next, err := s.KeyPastes(ctx, k.ID, "", 2)
	if err != nil || len(list) != 2 || next == "" {
		t.Fatalf("first page: %v, %q, %v; want 2 and a cursor", list, next, err)
	}
	rest, next, err := s.KeyPastes(ctx, k.ID, next, 2)
	if err != nil || len(rest) != 1 || next != "" || rest[0].Code == list[0].Code || rest[0].Code == list[1].Code {
		t.Fatalf("second page: %v, %q, %v; want the third paste and no cursor", rest, next, err)
	}

	res, err := s.TakeDownKey(ctx, store.KeyTakedown{ID: k.ID, Reason: "spam run", Revoke: true}, keyActor)
	if err != nil || len(res.Codes) != 3 || !res.Revoked || res.FreedContent != 2 || res.ReportsClosed != 1 {
		t.Fatalf("takedown by key: %+v, %v; want 3 pastes, 2 contents freed, revoked, its paste's report closed", res, err)
	}
	for receipt, want := range map[string]string{"receipt of a keyed paste": store.ReportActioned, "receipt of the keyless copy": store.ReportOpen} {
		if st, err := s.ReportStatus(ctx, store.HashToken(receipt)); err != nil || st.State != want {
			t.Errorf("%s: %+v, %v; want %s", receipt, st, err, want)
		}
	}
	if _, err := newKeyedPaste(t, s, "after", k.ID); !errors.Is(err, store.ErrKeyRevoked) {
		t.Errorf("create with a revoked key: %v, want ErrKeyRevoked", err)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM content WHERE content_hash = $1`, hashOf("after")); n != 0 {
		t.Errorf("a refused create left %d content rows", n)
	}
	for _, p := range []store.Paste{shared, kept} {
		if _, err := s.Paste(ctx, p.Code); err != nil {
			t.Errorf("paste %s of no key or another key: %v", p.Code, err)
		}
	}
	if rev, err := s.RevokeKey(ctx, k.ID, "", keyActor); err != nil || rev.Revoked {
		t.Errorf("revoking again: %+v, %v; want nothing done", rev, err)
	}
	if _, err := s.RevokeKey(ctx, 999999, "", keyActor); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking an unknown key: %v", err)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM admin_audit WHERE action LIKE 'key-%'`); n != 4 {
		t.Errorf("%d key actions audited, want 4: two mints, the takedown, the second revocation", n)
	}
	if a := storetest.Check(t, s.Pool(), nil); len(a.RefMismatches) > 0 || len(a.Unreferenced) > 0 {
		t.Errorf("ref_counts after the takedown by key: %+v", a)
	}
}

// TestCreatorKeysMigrate: rolled back, migration 00053 leaves the audit log's key entries (it is
// append-only) and the pastes; migrated again, it works as before.
func TestCreatorKeysMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := store.Open(ctx, storetest.NewDirectDatabase(t), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := newKey(t, s, "ci")
	p, err := newKeyedPaste(t, s, "keyed", k.ID)
	if err != nil {
		t.Fatal(err)
	}
	migrateBelow(t, s, creatorKeysMigration)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Paste(ctx, p.Code); err != nil {
		t.Errorf("the keyed paste after a rollback: %v", err)
	}
	if n := storetest.Count(t, s.Pool(), `SELECT count(*) FROM admin_audit WHERE action = 'key-create'`); n != 1 {
		t.Errorf("%d key-create entries after a rollback, want the one kept", n)
	}
	k = newKey(t, s, "again")
	if _, err := newKeyedPaste(t, s, "keyed again", k.ID); err != nil {
		t.Errorf("create with a key after migrating again: %v", err)
	}
}
