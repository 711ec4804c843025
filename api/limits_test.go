package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"pastebin/api"
	"pastebin/cache/cachetest"
)

// Tests of the limits against abuse: per-client rates of creates and failed deletes, who the client
// is behind proxies, and the bound on uploads in progress.

func perMinute(n int) api.Rate { return api.Rate{Requests: n, Window: time.Minute} }

// checkRefused checks that r is the problem typ, with Retry-After in whole seconds.
func checkRefused(t *testing.T, r response, status int, typ, retryAfter string) {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("got %d, want %d: %s", r.StatusCode, status, r.body)
	}
	if got := r.Header.Get("Retry-After"); got != retryAfter {
		t.Errorf("Retry-After %q, want %q", got, retryAfter)
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
		return // a page, for browsers
	}
	var p struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil || p.Type != "/problems/"+typ {
		t.Errorf("problem %s (%v), want type /problems/%s", r.body, err, typ)
	}
	if p.RequestID == "" || p.RequestID != r.Header.Get("X-Request-Id") {
		t.Errorf("problem request_id %q, X-Request-Id %q: want the same id", p.RequestID, r.Header.Get("X-Request-Id"))
	}
}

func TestCreateRateLimit(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, testCreateRateLimit)
}

func testCreateRateLimit(t *testing.T, kind cachetest.Kind) {
	e := newEnv(t, withRates(perMinute(3), api.Rate{}), withRedis(kind))
	// Every create route draws on the same allowance.
	for _, req := range []*http.Request{
		e.request(http.MethodPost, "/", strings.NewReader("one")),
		e.request(http.MethodPut, "/two.txt", strings.NewReader("two")),
		e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content":"three"}`), "Content-Type", "application/json"),
	} {
		if r := e.do(req); r.StatusCode != http.StatusCreated {
			t.Fatalf("%s %s: got %d, want 201: %s", req.Method, req.URL.Path, r.StatusCode, r.body)
		}
	}
	// Three at once spend the allowance, which comes back one create every 20 seconds.
	r := e.do(e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content":"four"}`), "Content-Type", "application/json"))
	checkRefused(t, r, http.StatusTooManyRequests, "rate-limited", "20")
	if got, want := r.Header.Get("X-RateLimit-Limit")+" "+r.Header.Get("X-RateLimit-Remaining"), "3 0"; got != want {
		t.Errorf("X-RateLimit-Limit and -Remaining %q, want %q", got, want)
	}
	checkRefused(t, e.do(e.request(http.MethodPost, "/documents", strings.NewReader("haste"))), http.StatusTooManyRequests, "rate-limited", "20")
	form := url.Values{"content": {"five"}}.Encode()
	page := e.send(e.request(http.MethodPost, "/", strings.NewReader(form),
		"Content-Type", "application/x-www-form-urlencoded", "Accept", browserAccept))
	checkRefused(t, page, http.StatusTooManyRequests, "rate-limited", "20")
	if ct := page.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" || !strings.Contains(page.text(), "Slow down") {
		t.Errorf("browser create over the limit: %s, want the error page: %.200s", ct, page.body)
	}
	if n := e.count(`SELECT count(*) FROM pastes`); n != 3 {
		t.Errorf("%d pastes stored, want the 3 within the limit", n)
	}
	if r := e.get("/healthz"); r.StatusCode != http.StatusOK {
		t.Errorf("reads are not limited: /healthz answered %d", r.StatusCode)
	}
}

// TestCreateRateLimitAcrossReplicas: the counts live in Redis, so two replicas add up to one limit
// rather than each allowing the whole of it.
func TestCreateRateLimitAcrossReplicas(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, testCreateRateLimitAcrossReplicas)
}

func testCreateRateLimitAcrossReplicas(t *testing.T, kind cachetest.Kind) {
	e := newEnv(t, withRates(perMinute(4), api.Rate{}), withRedis(kind))
	other := e.replica()
	for i, srv := range []*env{e, other, e, other} {
		srv.create(fmt.Sprint("paste ", i), "")
	}
	for _, srv := range []*env{e, other} {
		r := srv.do(srv.request(http.MethodPost, "/", strings.NewReader("one too many")))
		checkRefused(t, r, http.StatusTooManyRequests, "rate-limited", "15")
	}
}

// TestCreateRateLimitWithoutRedis: with Redis down, creates go on, and the limit still holds,
// counted in the process (docs/design.md, "Read": Redis down means slower, not broken).
func TestCreateRateLimitWithoutRedis(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRates(perMinute(2), perMinute(2)), withRateRedis(cachetest.Refused(t)))
	e.create("one", "")
	p := e.create("two", "")
	r := e.do(e.request(http.MethodPost, "/", strings.NewReader("three")))
	checkRefused(t, r, http.StatusTooManyRequests, "rate-limited", "30")
	if r := e.delete(p.code, p.token); r.StatusCode != http.StatusNoContent {
		t.Errorf("delete with Redis down: got %d, want 204: %s", r.StatusCode, r.body)
	}
}

func TestDeleteFailureLimit(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, testDeleteFailureLimit)
}

func testDeleteFailureLimit(t *testing.T, kind cachetest.Kind) {
	e := newEnv(t, withRates(api.Rate{}, perMinute(3)), withRedis(kind))
	p, q, s := e.create("p", ""), e.create("q", ""), e.create("s", "")
	wrong := strings.Repeat("A", 43)
	// A missing or malformed token is no guess at one: it costs nothing.
	for range 5 {
		if r := e.delete(p.code, "short"); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("malformed token: got %d, want 401", r.StatusCode)
		}
	}
	for range 2 {
		if r := e.delete(p.code, wrong); r.StatusCode != http.StatusForbidden {
			t.Fatalf("wrong token: got %d, want 403", r.StatusCode)
		}
	}
	// The owner's delete works between failures, and costs nothing either.
	if r := e.delete(q.code, q.token); r.StatusCode != http.StatusNoContent {
		t.Fatalf("right token after 2 failures: got %d, want 204: %s", r.StatusCode, r.body)
	}
	// The page's delete form counts in the same allowance: this is the third failure.
	if r := e.webDelete(p.code, wrong); r.StatusCode != http.StatusForbidden {
		t.Fatalf("wrong token in the form: got %d, want 403", r.StatusCode)
	}
	// The allowance is spent: every delete is refused before its token is checked, a right one too.
	checkRefused(t, e.delete(p.code, wrong), http.StatusTooManyRequests, "rate-limited", "20")
	checkRefused(t, e.delete(s.code, s.token), http.StatusTooManyRequests, "rate-limited", "20")
	checkRefused(t, e.webDelete(s.code, s.token), http.StatusTooManyRequests, "rate-limited", "20")
	if r := e.get("/raw/" + s.code); r.StatusCode != http.StatusOK {
		t.Errorf("refused deletes deleted the paste: read answered %d", r.StatusCode)
	}
}

// webDelete sends the paste page's delete form, as a browser.
func (e *env) webDelete(code, token string) response {
	e.t.Helper()
	return e.send(e.request(http.MethodPost, "/"+code+"/delete", strings.NewReader(url.Values{"token": {token}}.Encode()),
		"Content-Type", "application/x-www-form-urlencoded", "Accept", browserAccept))
}

func TestClientBehindProxies(t *testing.T) {
	t.Parallel()
	trust := func(cidrs ...string) envOption {
		return withConfig(func(c *api.Config) {
			for _, p := range cidrs {
				c.TrustedProxies = append(c.TrustedProxies, netip.MustParsePrefix(p))
			}
		})
	}
	clientIPHeader := func(h string) envOption { return withConfig(func(c *api.Config) { c.ClientIPHeader = h }) }
	type step struct {
		headers []string
		want    int
	}
	tests := []struct {
		name  string
		opts  []envOption
		steps []step
	}{
		{"no trusted proxy: headers from the peer are ignored", nil, []step{
			{[]string{"X-Forwarded-For", "198.51.100.1"}, 201},
			{[]string{"X-Forwarded-For", "198.51.100.2", "X-Real-IP", "198.51.100.2"}, 429}, // no fresh bucket
		}},
		{"peer outside the trusted ranges", []envOption{trust("10.0.0.0/8")}, []step{
			{[]string{"X-Forwarded-For", "198.51.100.1"}, 201},
			{[]string{"X-Forwarded-For", "198.51.100.2"}, 429},
		}},
		{"trusted proxy, X-Forwarded-For", []envOption{trust("127.0.0.0/8", "::1/128")}, []step{
			{[]string{"X-Forwarded-For", "203.0.113.1"}, 201},
			{[]string{"X-Forwarded-For", "203.0.113.1"}, 429},
			{[]string{"X-Forwarded-For", "203.0.113.2, 127.0.0.9"}, 201}, // the rightmost untrusted hop
			// The client wrote the leftmost entry; the proxy appended the address it saw.
			{[]string{"X-Forwarded-For", "203.0.113.99, 203.0.113.2"}, 429},
			{[]string{"X-Forwarded-For", "2001:db8::1"}, 201},
			{[]string{"X-Forwarded-For", "2001:db8::2"}, 429}, // the same /64
			{nil, 201}, // the proxy named no one: its own address
			// X-Real-IP is not the header this proxy sets: a client wrote it, and gets the proxy's bucket.
			{[]string{"X-Real-IP", "203.0.113.3"}, 429},
		}},
		{"trusted proxy, X-Real-IP", []envOption{trust("127.0.0.0/8", "::1/128"), clientIPHeader("X-Real-IP")}, []step{
			{[]string{"X-Real-IP", "203.0.113.1"}, 201},
			// The proxy passes on the X-Forwarded-For the client wrote: it buys no fresh bucket.
			{[]string{"X-Real-IP", "203.0.113.1", "X-Forwarded-For", "198.51.100.7"}, 429},
			{[]string{"X-Real-IP", "203.0.113.4", "X-Forwarded-For", "203.0.113.1"}, 201},
			{[]string{"X-Forwarded-For", "198.51.100.8"}, 201}, // no X-Real-IP: the proxy's own address
			{[]string{"X-Forwarded-For", "198.51.100.9"}, 429},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, append(tt.opts, withRates(perMinute(1), api.Rate{}))...)
			for i, s := range tt.steps {
				r := e.do(e.request(http.MethodPost, "/", strings.NewReader(fmt.Sprint("paste ", i)), s.headers...))
				if r.StatusCode != s.want {
					t.Errorf("create %d with %q: got %d, want %d", i, s.headers, r.StatusCode, s.want)
				}
			}
		})
	}
}

func TestConcurrentUploadLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *api.Config) { c.MaxConcurrentUploads = 1 }))
	body, w := io.Pipe()
	first := make(chan int, 1)
	go func() {
		resp, err := e.srv.Client().Do(e.request(http.MethodPost, "/", body))
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	_, _ = w.Write([]byte("a slow upload, "))
	waitFor(t, func() bool { return strings.Contains(e.get("/metrics").text(), "pastebin_uploads_in_flight 1") })

	r := e.do(e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content":"waits, then gives up"}`),
		"Content-Type", "application/json"))
	checkRefused(t, r, http.StatusServiceUnavailable, "busy", "1")

	_, _ = w.Write([]byte("finished at last"))
	w.Close()
	if got := <-first; got != http.StatusCreated {
		t.Fatalf("the slow upload: got %d, want 201", got)
	}
	e.create("the slot is free again", "")
	if m := e.get("/metrics").text(); !strings.Contains(m, `pastebin_requests_refused_total{limit="uploads"} 1`) {
		t.Errorf("metrics do not count the refused upload:\n%s", grep(m, "refused"))
	}
}

// waitFor polls cond until it holds, for up to 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
	}
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want api.Rate
		err  bool
	}{
		{"60/1m", perMinute(60), false},
		{"60/m", perMinute(60), false},
		{"10/1h", api.Rate{Requests: 10, Window: time.Hour}, false},
		{"5/90s", api.Rate{Requests: 5, Window: 90 * time.Second}, false},
		{"off", api.Rate{}, false},
		{"0", api.Rate{}, false},
		{"60", api.Rate{}, true},
		{"-1/1m", api.Rate{}, true},
		{"60/500ms", api.Rate{}, true},
		{"60/never", api.Rate{}, true},
	}
	for _, tt := range tests {
		got, err := api.ParseRate(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("ParseRate(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
		if err == nil && got.String() != strings.Replace(tt.in, "/m", "/1m", 1) && tt.in != "0" {
			t.Errorf("Rate(%q).String() = %q", tt.in, got.String())
		}
	}
}

// TestForwardedHTTPS: behind a proxy that terminates TLS, a request it says came over HTTPS
// (X-Forwarded-Proto) gets https addresses and Secure cookies; the same header from any other peer
// is ignored, since anyone can write it.
func TestForwardedHTTPS(t *testing.T) {
	t.Parallel()
	trusted := withConfig(func(c *api.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	for _, tc := range []struct {
		name  string
		opts  []envOption
		https bool
	}{
		{"from a trusted proxy", []envOption{withAdmin(adminToken, 1), trusted}, true},
		{"from any other peer", []envOption{withAdmin(adminToken, 1)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.opts...)
			r := e.send(e.request(http.MethodPost, "/", strings.NewReader("over https"), "X-Forwarded-Proto", "https"))
			if got := strings.HasPrefix(r.text(), "https://"); r.StatusCode != http.StatusCreated || got != tc.https {
				t.Errorf("create: %d, answer %q; want an https address: %v", r.StatusCode, r.text(), tc.https)
			}
			r = e.form("/admin/sign-in", url.Values{"token": {adminToken}}, "X-Forwarded-Proto", "https")
			if cs := r.Cookies(); r.StatusCode != http.StatusSeeOther || len(cs) != 1 || cs[0].Secure != tc.https {
				t.Errorf("sign-in: %d, cookies %+v; want one, Secure: %v", r.StatusCode, cs, tc.https)
			}
		})
	}
}
