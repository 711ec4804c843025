package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

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

// TestBurnAfterReadingRace lets 20 readers race for one burn-after-reading paste: exactly one gets it.
func TestBurnAfterReadingRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("read me once", "?burn=true")
	if r := e.do(e.request(http.MethodHead, "/raw/"+p.code, nil)); r.StatusCode != http.StatusOK {
		t.Fatalf("HEAD: %d", r.StatusCode)
	}
	if r := e.get("/api/v1/pastes/" + p.code); r.StatusCode != http.StatusOK {
		t.Fatalf("metadata: %d; HEAD and metadata must not burn it", r.StatusCode)
	}
	var wg sync.WaitGroup
	var got, gone atomic.Int64
	for i := 0; i < 20; i++ {
		wg.Go(func() {
			r := e.get("/raw/" + p.code)
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
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusGone {
		t.Errorf("a later read: %d, want 410", r.StatusCode)
	}
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
	if n := e.count(`SELECT count(*) FROM content`); n != 0 {
		t.Errorf("content rows after the burn: %d, want 0", n)
	}
}
