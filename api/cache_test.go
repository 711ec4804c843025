package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"pastebin/blob/blobtest"
	"pastebin/cache"
	"pastebin/store/storetest"
)

// cached reports whether Redis holds a live entry for code.
func (e *env) cached(code string) bool {
	e.t.Helper()
	v, err := e.rdb.Get(context.Background(), e.cache.Key(code)).Bytes()
	return err == nil && len(v) > 0 && v[0] != 0
}

// TestExpiredNeverServedFromCache is invariant 4 through the cache: a cached paste whose expiry
// passed answers 410 on every path, although no cleanup ran and Redis still holds it.
func TestExpiredNeverServedFromCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("short-lived", "?expires_in=10m")
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusOK {
		t.Fatalf("first read: %d", r.StatusCode)
	}
	if !e.cached(p.code) {
		t.Fatal("the read did not fill the cache; the test would prove nothing")
	}
	e.clock.advance(11 * time.Minute)
	// The world agrees with the clock: in PostgreSQL too the paste is past its expiry.
	if _, err := e.store.Pool().Exec(context.Background(),
		`UPDATE pastes SET expires_at = now() - interval '1 minute' WHERE short_code = $1`, p.code); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/raw/" + p.code, "/" + p.code, "/api/v1/pastes/" + p.code} {
		if r := e.get(path); r.StatusCode != http.StatusGone {
			t.Errorf("GET %s after expiry: %d %q, want 410", path, r.StatusCode, r.body)
		}
	}
	if r := e.do(e.request(http.MethodHead, "/raw/"+p.code, nil)); r.StatusCode != http.StatusGone {
		t.Errorf("HEAD after expiry: %d, want 410", r.StatusCode)
	}
	if !e.cached(p.code) {
		t.Error("the entry left Redis: the test no longer shows that the cache itself refuses it")
	}
}

// TestExpiredBeforeCleanupFromDatabase: with nothing cached, the database's expiry decides, whether
// or not cleanup has run.
func TestExpiredBeforeCleanupFromDatabase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("short-lived", "?expires_in=1h")
	if _, err := e.store.Pool().Exec(context.Background(),
		`UPDATE pastes SET expires_at = now() - interval '1 second' WHERE short_code = $1`, p.code); err != nil {
		t.Fatal(err)
	}
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusGone || !strings.Contains(r.text(), "expired") {
		t.Errorf("expired, not cleaned: %d %q, want 410 saying it expired", r.StatusCode, r.body)
	}
}

// TestDeletedNeverServedFromCache is invariant 5: once DELETE returned, no path serves the paste,
// although it was cached, and a reader that raced the delete cannot put it back.
func TestDeletedNeverServedFromCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("soon deleted", "")
	e.get("/raw/" + p.code)
	if !e.cached(p.code) {
		t.Fatal("the read did not fill the cache; the test would prove nothing")
	}
	if r := e.delete(p.code, p.token); r.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", r.StatusCode)
	}
	for _, path := range []string{"/raw/" + p.code, "/" + p.code, "/api/v1/pastes/" + p.code} {
		r := e.get(path)
		if r.StatusCode != http.StatusGone || !strings.Contains(r.text(), "deleted by its owner") {
			t.Errorf("GET %s after delete: %d %q, want 410 saying the owner deleted it", path, r.StatusCode, r.body)
		}
	}
	// A reader that read PostgreSQL before the delete committed now tries to fill the cache.
	stale := e.clock.now()
	e.cache.Put(context.Background(), toCachePaste(p.code, "soon deleted", stale), time.Hour, stale)
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusGone {
		t.Errorf("after a late fill: %d, want 410", r.StatusCode)
	}
}

// TestStorageDownOnCreate: with S3 unreachable a create answers 503 and leaves no trace: no paste,
// no content row, no ref_count change. Pastes already cached keep being served.
func TestStorageDownOnCreate(t *testing.T) {
	t.Parallel()
	bucket, s3srv := blobtest.Embedded(t)
	e := newEnv(t, withBucket(bucket))
	shared := e.create("already stored", "")
	e.get("/raw/" + shared.code) // now cached
	keys := blobtest.Keys(t, bucket)

	if err := s3srv.Close(); err != nil {
		t.Fatal(err)
	}
	before := e.count(`SELECT count(*) FROM pastes`)
	r := e.do(e.request(http.MethodPost, "/", strings.NewReader("new bytes")))
	if r.StatusCode != http.StatusServiceUnavailable || !strings.Contains(r.text(), "storage-unavailable") {
		t.Fatalf("create with S3 down: %d %q, want 503 storage-unavailable", r.StatusCode, r.body)
	}
	if after := e.count(`SELECT count(*) FROM pastes`); after != before {
		t.Errorf("pastes %d → %d", before, after)
	}
	if got := e.refCount("new bytes"); got != -1 {
		t.Errorf("a content row exists for the failed create (ref_count %d)", got)
	}
	if got := e.refCount("already stored"); got != 1 {
		t.Errorf("ref_count of other content changed to %d", got)
	}
	if r := e.get("/raw/" + shared.code); r.text() != "already stored" {
		t.Errorf("cached paste with S3 down: %d %q", r.StatusCode, r.body)
	}
	if r := e.get("/readyz"); r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz with S3 down: %d, want 503", r.StatusCode)
	}
	storetest.Check(t, e.store.Pool(), keys).Consistent(t)
}

// toCachePaste is a cache entry as a reader that read the database early would write it.
func toCachePaste(code, content string, now time.Time) cache.Paste {
	return cache.Paste{Code: code, Size: int64(len(content)), Content: []byte(content), CreatedAt: now}
}
