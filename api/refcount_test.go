package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pastebin/blob/blobtest"
	"pastebin/store/storetest"
)

// TestRefCountStory is the ref-counting seed's story: A and B paste the same bytes; their deletes,
// repeated, leave the content exactly as long as someone holds it.
func TestRefCountStory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const text = "hello world"
	a := e.create(text, "")
	b := e.create(text, "")
	if got := e.refCount(text); got != 2 {
		t.Fatalf("after two creates: ref_count %d, want 2", got)
	}
	if n := e.count(`SELECT count(*) FROM content`); n != 1 {
		t.Fatalf("content rows %d, want 1", n)
	}
	if keys := blobtest.Keys(t, e.bucket); len(keys) != 1 {
		t.Fatalf("bucket holds %v, want exactly one object", keys)
	}

	if r := e.delete(a.code, a.token); r.StatusCode != http.StatusNoContent {
		t.Fatalf("A deletes: %d", r.StatusCode)
	}
	if got := e.refCount(text); got != 1 {
		t.Fatalf("after A deletes: ref_count %d, want 1", got)
	}
	if r := e.get("/raw/" + b.code); r.text() != text {
		t.Fatalf("B reads %d %q after A deleted", r.StatusCode, r.body)
	}
	if r := e.delete(a.code, a.token); r.StatusCode != http.StatusNoContent {
		t.Fatalf("A deletes again: %d, want 204", r.StatusCode)
	}
	if got := e.refCount(text); got != 1 {
		t.Fatalf("after A deletes twice: ref_count %d, want 1", got)
	}
	if r := e.get("/raw/" + a.code); r.StatusCode != http.StatusGone {
		t.Fatalf("A's paste answers %d, want 410", r.StatusCode)
	}

	if r := e.delete(b.code, b.token); r.StatusCode != http.StatusNoContent {
		t.Fatalf("B deletes: %d", r.StatusCode)
	}
	if got := e.refCount(text); got != -1 {
		t.Fatalf("after B deletes: content row still there (ref_count %d)", got)
	}
	audit := storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket))
	if len(audit.Outbox) != 1 {
		t.Fatalf("outbox %v, want the blob queued for deletion", audit.Outbox)
	}
	audit.Consistent(t)
	select {
	case <-e.freed:
	default:
		t.Error("the blob deleter was not told about the freed blob")
	}
}

// TestDedupDoesNotShow checks that the second create of the same bytes answers the same shape as the
// first: nothing tells a client that someone else stored them before.
func TestDedupDoesNotShow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	shape := func() ([]string, map[string]bool) {
		r := e.do(e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content":"same bytes"}`),
			"Content-Type", "application/json"))
		var body map[string]any
		_ = json.Unmarshal(r.body, &body)
		fields := map[string]bool{}
		for k := range body {
			fields[k] = true
		}
		var headers []string
		for h := range r.Header {
			if h != "Date" {
				headers = append(headers, h)
			}
		}
		return headers, fields
	}
	h1, f1 := shape()
	h2, f2 := shape()
	if len(h1) != len(h2) || len(f1) != len(f2) {
		t.Errorf("first create: headers %v fields %v; second: headers %v fields %v", h1, f1, h2, f2)
	}
	if got := e.refCount("same bytes"); got != 2 {
		t.Errorf("ref_count %d, want 2", got)
	}
}

// TestConcurrentCreateDelete runs 60 goroutines creating and deleting pastes over a handful of shared
// contents at once; invariants 1 and 2 must hold exactly afterwards.
func TestConcurrentCreateDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	contents := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	var wg sync.WaitGroup
	var kept, failed atomic.Int64
	for g := 0; g < 60; g++ {
		wg.Go(func() {
			for i := 0; i < 6; i++ {
				text := contents[(g+i)%len(contents)]
				r := e.do(e.request(http.MethodPost, "/", strings.NewReader(text)))
				if r.StatusCode != http.StatusCreated {
					failed.Add(1)
					continue
				}
				lines := strings.Split(strings.TrimSpace(r.text()), "\n")
				code := lines[0][strings.LastIndex(lines[0], "/")+1:]
				if (g+i)%3 == 0 {
					kept.Add(1)
					continue
				}
				if d := e.delete(code, lines[1]); d.StatusCode != http.StatusNoContent {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d requests failed", failed.Load())
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE status = 'NOT_EXPIRED'`); int64(n) != kept.Load() {
		t.Errorf("live pastes %d, want %d", n, kept.Load())
	}
	if n := e.count(`SELECT coalesce(sum(ref_count), 0) FROM content`); int64(n) != kept.Load() {
		t.Errorf("sum of ref_counts %d, want %d", n, kept.Load())
	}
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
}

// TestBurnAfterReadingRace lets 20 readers (POSTs) race for one burn-after-reading paste: exactly one gets it.
func TestBurnAfterReadingRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("read me once", "?burn=true")
	if r := e.do(e.request(http.MethodHead, "/raw/"+p.code, nil)); r.StatusCode != http.StatusConflict {
		t.Fatalf("HEAD: %d, want 409", r.StatusCode)
	}
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusConflict {
		t.Fatalf("GET: %d, want 409", r.StatusCode)
	}
	if r := e.get("/api/v1/pastes/" + p.code); r.StatusCode != http.StatusOK {
		t.Fatalf("metadata: %d; HEAD, GET and metadata must not burn it", r.StatusCode)
	}
	var wg sync.WaitGroup
	var got, gone atomic.Int64
	for i := 0; i < 20; i++ {
		wg.Go(func() {
			r := e.do(e.request(http.MethodPost, "/raw/"+p.code, nil))
			switch {
			case r.StatusCode == http.StatusOK && r.text() == "read me once":
				got.Add(1)
				if r.Header.Get("Cache-Control") != "no-store" {
					t.Errorf("burned read Cache-Control %q, want no-store", r.Header.Get("Cache-Control"))
				}
			case r.StatusCode == http.StatusGone:
				gone.Add(1)
			default:
				t.Errorf("reader got %d %q", r.StatusCode, r.body)
			}
		})
	}
	wg.Wait()
	if got.Load() != 1 || gone.Load() != 19 {
		t.Fatalf("%d readers got the content and %d got 410, want 1 and 19", got.Load(), gone.Load())
	}
	if r := e.do(e.request(http.MethodPost, "/"+p.code, nil)); r.StatusCode != http.StatusGone {
		t.Errorf("a later read: %d, want 410", r.StatusCode)
	}
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
	if n := e.count(`SELECT count(*) FROM content`); n != 0 {
		t.Errorf("content rows after the burn: %d, want 0", n)
	}
}

// TestCreateRacesCleanupToZero forces the create/cleanup race (docs/design.md, "Create"): a cleanup transaction
// has brought a content row to zero and deleted it, uncommitted, holding its lock, when a create of
// the same bytes takes the dedup fast path and waits on that lock. Once cleanup commits, the
// create's increment finds no row, so it uploads under a fresh key and inserts a new content row:
// the old blob goes through the outbox and can never take the new paste's bytes with it.
func TestCreateRacesCleanupToZero(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const text = "bytes that expire and come back"
	old := e.create(text, "")
	e.exec(`UPDATE pastes SET expires_at = now() - interval '1 minute' WHERE short_code = $1`, old.code)
	var oldKey string
	if err := e.store.Pool().QueryRow(ctx, `SELECT blob_key FROM content`).Scan(&oldKey); err != nil {
		t.Fatal(err)
	}
	claim, err := e.store.ClaimExpired(ctx, 10, time.Time{})
	if err != nil || len(claim.Codes) != 1 {
		t.Fatalf("claim: %v, %d pastes", err, len(claim.Codes))
	}

	// A lock on the table of the cleanup batches' outbox rows stops the finishing transaction at its
	// last insert, after its decrement and its delete of the content row, with the row still locked.
	blocker, err := e.store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	if _, err := blocker.Exec(ctx, `LOCK TABLE blob_deletion_batches IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	finished := make(chan error, 1)
	go func() { _, err := e.store.FinishClaim(ctx, claim, 0); finished <- err }()
	e.waitLockWaiters(1)
	createdCh := make(chan *http.Response, 1)
	go func() {
		resp, err := e.srv.Client().Post(e.srv.URL+"/", "text/plain", strings.NewReader(text))
		if err != nil {
			t.Error(err)
		}
		createdCh <- resp
	}()
	e.waitLockWaiters(2) // the create's increment waits on the content row

	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-finished; err != nil {
		t.Fatalf("finish the cleanup batch: %v", err)
	}
	resp := <-createdCh
	if resp == nil {
		t.FailNow()
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create during cleanup: %d %s", resp.StatusCode, body)
	}
	code := strings.TrimSpace(strings.SplitN(string(body), "\n", 2)[0])
	code = code[strings.LastIndex(code, "/")+1:]

	var newKey string
	var refs int
	if err := e.store.Pool().QueryRow(ctx, `SELECT blob_key, ref_count FROM content`).Scan(&newKey, &refs); err != nil {
		t.Fatal(err)
	}
	if newKey == oldKey || refs != 1 {
		t.Errorf("content after the race: key %s (old %s), ref_count %d; want a new key and 1", newKey, oldKey, refs)
	}
	if n := e.count(`SELECT count(*) FROM blob_outbox WHERE blob_key = $1`, oldKey); n != 1 {
		t.Errorf("the old generation's blob is not in the outbox")
	}
	if r := e.get("/raw/" + code); r.text() != text {
		t.Errorf("the new paste reads %d %q", r.StatusCode, r.body)
	}
	if r := e.get("/raw/" + old.code); r.StatusCode != http.StatusGone {
		t.Errorf("the expired paste reads %d, want 410", r.StatusCode)
	}
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
}

// waitLockWaiters waits until n backends of the test's database wait on a lock.
func (e *env) waitLockWaiters(n int) {
	e.t.Helper()
	for i := 0; ; i++ {
		if e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) >= n {
			return
		}
		if i == 1500 {
			e.t.Fatalf("no %d backends wait on a lock after 30s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) exec(query string, args ...any) {
	e.t.Helper()
	if _, err := e.store.Pool().Exec(context.Background(), query, args...); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
}
