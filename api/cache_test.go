package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/api"
	"pastebin/blob/blobtest"
	"pastebin/cache"
	"pastebin/cache/cachetest"
	"pastebin/store"
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
	cachetest.ForEach(t, testExpiredNeverServedFromCache)
}

func testExpiredNeverServedFromCache(t *testing.T, kind cachetest.Kind) {
	e := newEnv(t, withRedis(kind))
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
	cachetest.ForEach(t, testDeletedNeverServedFromCache)
}

func testDeletedNeverServedFromCache(t *testing.T, kind cachetest.Kind) {
	e := newEnv(t, withRedis(kind))
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
	// A reader missed the cache and read PostgreSQL before the delete committed; it fills the
	// cache after the delete answered.
	q := e.create("raced", "")
	ctx, now := context.Background(), e.clock.now()
	miss := e.cache.Get(ctx, q.code, now)
	if r := e.delete(q.code, q.token); r.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", r.StatusCode)
	}
	e.cache.Put(ctx, miss, toCachePaste(q.code, "raced", now), time.Hour, now)
	if r := e.get("/raw/" + q.code); r.StatusCode != http.StatusGone {
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

// replicaWith is another API process over the same database and bucket whose cache is c.
func (e *env) replicaWith(c *cache.Cache) *env {
	e.t.Helper()
	deps := e.deps
	deps.Registry, deps.Cache = prometheus.NewRegistry(), c
	r := *e
	r.srv = httptest.NewServer(api.NewServer(e.cfg, deps))
	e.t.Cleanup(r.srv.Close)
	return &r
}

// TestDeleteUnconfirmedWhileCutOffFromRedis is invariant 5 with two replicas, one of which cannot
// reach Redis: its delete commits but cannot replace the entry the other replica serves, so it is
// answered 503 with Retry-After, never 204. Sent again once Redis is reachable, it answers 204 and
// the other replica stops serving the paste.
func TestDeleteUnconfirmedWhileCutOffFromRedis(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	proxy := blobtest.NewProxy(t, cachetest.Options(t).Addr)
	opts := cachetest.Options(t)
	opts.Addr, opts.DialTimeout, opts.ReadTimeout, opts.MaxRetries = proxy.Addr(), 200*time.Millisecond, 200*time.Millisecond, -1
	cutOff := cache.Open(opts, e.prefix, testLogger)
	t.Cleanup(func() { cutOff.Close() })
	a := e.replicaWith(cutOff)

	p := e.create("cached by the other replica", "")
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusOK || !e.cached(p.code) {
		t.Fatalf("read through the replica that reaches Redis: %d, cached %v", r.StatusCode, e.cached(p.code))
	}
	proxy.Cut()
	r := a.delete(p.code, p.token)
	if r.StatusCode != http.StatusServiceUnavailable || !strings.Contains(r.text(), "delete-unconfirmed") ||
		r.Header.Get("Retry-After") == "" {
		t.Fatalf("delete cut off from Redis: %d %q (Retry-After %q), want 503 delete-unconfirmed with Retry-After",
			r.StatusCode, r.body, r.Header.Get("Retry-After"))
	}
	if _, err := e.store.Paste(context.Background(), p.code); !errors.Is(err, store.ErrGone) {
		t.Errorf("the database after the unconfirmed delete: %v, want the paste gone", err)
	}

	proxy.Restore()
	if r := a.delete(p.code, p.token); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the same delete once Redis is reachable: %d %q, want 204", r.StatusCode, r.body)
	}
	for _, replica := range []*env{e, a} {
		if r := replica.get("/raw/" + p.code); r.StatusCode != http.StatusGone {
			t.Errorf("read after the confirmed delete: %d, want 410", r.StatusCode)
		}
	}
}

// TestCacheSafeAgainstClockSkew: this process's clock and PostgreSQL's disagree by 8 seconds,
// either way. Near its expiry a cached entry is not judged by this process's clock: the database
// decides, so an expired paste is never served from the cache (invariant 4) and a live one is not
// refused early.
func TestCacheSafeAgainstClockSkew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		skew      time.Duration // this process's clock minus the database's
		expiresIn string
		want      int
	}{
		{"process behind, expired in the database", -8 * time.Second, "5", http.StatusGone},
		{"process ahead, live in the database", 8 * time.Second, "5", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.clock.advance(tc.skew)
			p := e.create("skewed", "?expires_in="+tc.expiresIn)
			var expires time.Time
			if err := e.store.Pool().QueryRow(ctx, `SELECT expires_at FROM pastes WHERE short_code = $1`, p.code).Scan(&expires); err != nil {
				t.Fatal(err)
			}
			// The entry a replica would have written while the paste was live for everyone.
			then := e.clock.now().Add(-time.Minute)
			e.cache.Put(ctx, e.cache.Get(ctx, p.code, then), cache.Paste{Code: p.code, Size: 6, Content: []byte("skewed"),
				CreatedAt: then, ExpiresAt: expires}, time.Hour, then)
			if !e.cached(p.code) {
				t.Fatal("the entry was not written: the test would prove nothing")
			}
			if r := e.get("/raw/" + p.code); r.StatusCode != tc.want {
				t.Errorf("read with the clocks %s apart: %d %q, want %d", tc.skew, r.StatusCode, r.body, tc.want)
			}
		})
	}
}
