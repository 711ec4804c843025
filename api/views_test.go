package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"pastebin/api"
	"pastebin/blob/blobtest"
	"pastebin/store"
	"pastebin/store/storetest"
)

// meta reads a paste's metadata.
func (e *env) meta(code string) map[string]any {
	e.t.Helper()
	r := e.get("/api/v1/pastes/" + code)
	if r.StatusCode != http.StatusOK {
		e.t.Fatalf("metadata of %s: %d %s", code, r.StatusCode, r.body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// TestViewLimitCountsDown: a paste of three views answers each POST with its bytes and the views
// left, the metadata and the page show them, and no GET, HEAD, metadata or page takes one. The
// third POST takes the paste: 410 after it, and its content released.
func TestViewLimitCountsDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("three views", "?max_views=3")
	for left := 3; left > 0; left-- {
		if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusConflict || !strings.Contains(r.text(), "view-limited") {
			t.Fatalf("GET raw: %d %s, want 409 view-limited", r.StatusCode, r.body)
		}
		if r := e.get("/"+p.code, "Accept", "text/html"); r.StatusCode != http.StatusOK || strings.Contains(r.text(), "three views") ||
			!strings.Contains(r.text(), strconv.Itoa(left)+" of 3 views left") {
			t.Fatalf("the page: %d, want the interstitial with %d views left, without the text", r.StatusCode, left)
		}
		if r := e.do(e.request(http.MethodHead, "/"+p.code, nil)); r.StatusCode != http.StatusConflict {
			t.Fatalf("HEAD: %d", r.StatusCode)
		}
		m := e.meta(p.code)
		if m["max_views"] != 3.0 || m["views_left"] != float64(left) || m["burn_after_read"] != false {
			t.Fatalf("metadata: %v, want 3 views, %d left", m, left)
		}
		r := e.do(e.request(http.MethodPost, "/raw/"+p.code, nil))
		if r.StatusCode != http.StatusOK || r.text() != "three views" || r.Header.Get("Paste-Views-Left") != strconv.Itoa(left-1) ||
			r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("POST: %d %q, Paste-Views-Left %q", r.StatusCode, r.body, r.Header.Get("Paste-Views-Left"))
		}
	}
	for _, path := range []string{"/raw/" + p.code, "/api/v1/pastes/" + p.code} {
		if r := e.get(path); r.StatusCode != http.StatusGone {
			t.Errorf("GET %s after the last view: %d, want 410", path, r.StatusCode)
		}
	}
	if r := e.do(e.request(http.MethodPost, "/"+p.code, nil)); r.StatusCode != http.StatusGone {
		t.Errorf("a fourth POST: %d, want 410", r.StatusCode)
	}
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
	if n := e.count(`SELECT count(*) FROM content`); n != 0 {
		t.Errorf("content rows after the last view: %d, want 0", n)
	}
}

// TestViewLimitOptions: max_views comes as a query parameter, a header, a form field or JSON;
// burn is one view; out of range, not a number, or beside burn with another count, it is 400.
func TestViewLimitOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	form := url.Values{"content": {"x"}, "max_views": {"7"}}
	for name, req := range map[string]*http.Request{
		"query":     e.request(http.MethodPost, "/?max_views=7", strings.NewReader("x")),
		"header":    e.request(http.MethodPost, "/", strings.NewReader("x"), "Paste-Max-Views", "7"),
		"json":      e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content": "x", "max_views": 7}`), "Content-Type", "application/json"),
		"curl form": e.request(http.MethodPost, "/", strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded"),
	} {
		r := e.do(req)
		if r.StatusCode != http.StatusCreated {
			t.Errorf("%s: %d %s", name, r.StatusCode, r.body)
		}
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE max_views = 7 AND views_left = 7 AND burn_after_read`); n != 3 {
		t.Errorf("%d pastes of 7 views, want 3 (the curl form's body is the paste itself)", n)
	}
	for _, q := range []string{"?max_views=1", "?burn=true&max_views=1", "?burn=true"} {
		p := e.create("once", q)
		if m := e.meta(p.code); m["max_views"] != 1.0 || m["burn_after_read"] != true {
			t.Errorf("%s: %v, want one view, burn after reading", q, m)
		}
	}
	for _, q := range []string{"?max_views=0", "?max_views=1001", "?max_views=-1", "?max_views=two", "?max_views=2.5", "?burn=true&max_views=2"} {
		if r := e.do(e.request(http.MethodPost, "/"+q, strings.NewReader("x"))); r.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, r.StatusCode)
		}
	}
	for _, body := range []string{`{"content": "x", "max_views": 0}`, `{"content": "x", "max_views": 1001}`, `{"content": "x", "max_views": "3"}`} {
		r := e.do(e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(body), "Content-Type", "application/json"))
		if r.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", body, r.StatusCode)
		}
	}
	r := e.do(e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content": "x", "max_views": null}`), "Content-Type", "application/json"))
	if r.StatusCode != http.StatusCreated || !strings.Contains(r.text(), `"max_views":null`) {
		t.Errorf("max_views null: %d %s, want a paste without a limit", r.StatusCode, r.body)
	}
}

// TestViewLimitExactlyOnceAcrossReplicas races 60 readers over two servers, each with a
// database pool of its own, for the 9 views of a paste whose content another paste shares: each
// view goes to one reader (9 answers with its bytes, each a different number of views left), the
// others get 410, and the last view released one reference: invariants 1 to 3 hold.
func TestViewLimitExactlyOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.replicaWithOwnPool()
	p := e.create("nine views", "?max_views=9")
	e.create("nine views", "")
	var mu sync.Mutex
	var left []int
	var gone int
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 60 {
		server := e
		if i%2 == 1 {
			server = other
		}
		wg.Go(func() {
			<-start
			r := server.do(server.request(http.MethodPost, "/raw/"+p.code, nil))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.StatusCode == http.StatusOK && r.text() == "nine views":
				n, _ := strconv.Atoi(r.Header.Get("Paste-Views-Left"))
				left = append(left, n)
			case r.StatusCode == http.StatusGone:
				gone++
			default:
				t.Errorf("reader %d: %d %s", i, r.StatusCode, r.body)
			}
		})
	}
	close(start)
	wg.Wait()
	slices.Sort(left)
	if diff := cmp.Diff([]int{0, 1, 2, 3, 4, 5, 6, 7, 8}, left); diff != "" || gone != 51 {
		t.Errorf("%d readers got 410, want 51; views left as the readers saw them (-want +got):\n%s", gone, diff)
	}
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
	if n := e.refCount("nine views"); n != 1 {
		t.Errorf("ref_count %d after the last view, want 1: the other paste's", n)
	}
	if n := e.count(`SELECT count(*) FROM tombstones WHERE deleted_reason = 'burned'`); n != 1 {
		t.Errorf("%d pastes burned, want 1", n)
	}
}

// replicaWithOwnPool is another API process over the same database through a pool of its own,
// as a replica on another machine would be, with the same bucket and Redis.
func (e *env) replicaWithOwnPool() *env {
	e.t.Helper()
	var name string
	if err := e.store.Pool().QueryRow(context.Background(), `SELECT current_database()`).Scan(&name); err != nil {
		e.t.Fatal(err)
	}
	dbURL := storetest.DatabaseURL(storetest.AdminURL(e.t), name)
	s, err := store.Open(context.Background(), dbURL, slog.New(slog.DiscardHandler))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(s.Close)
	deps := e.deps
	deps.Registry, deps.Store = prometheus.NewRegistry(), s
	r := *e
	r.srv, r.store = httptest.NewServer(api.NewServer(e.cfg, deps)), s
	e.t.Cleanup(r.srv.Close)
	return &r
}
