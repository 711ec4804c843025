package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// slackbot is what Slack's link preview sends; Discord, Teams, mail scanners and prefetchers send alike.
var slackbot = []string{"Accept", "*/*", "User-Agent", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"}

// createBurning makes a burn-after-reading paste as the README's header example does.
func (e *env) createBurning(content string) created {
	e.t.Helper()
	r := e.do(e.request(http.MethodPost, "/", strings.NewReader(content), "Paste-Burn-After-Reading", "true"))
	if r.StatusCode != http.StatusCreated {
		e.t.Fatalf("create: %d %s", r.StatusCode, r.body)
	}
	lines := strings.Split(strings.TrimSpace(r.text()), "\n")
	return created{code: lines[0][strings.LastIndex(lines[0], "/")+1:], url: lines[0], token: lines[1]}
}

// TestBurnGetNeverReads: no GET or HEAD, whatever its Accept or user agent, returns a burn paste's
// content or takes it (RFC 9110, section 9.2.1: GET is safe). A browser gets the page that asks
// first; every other GET a 409 that says how to read it.
func TestBurnGetNeverReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const secret = "the secret for one person"
	p := e.createBurning(secret)
	for _, tt := range []struct {
		method, path string
		headers      []string
	}{
		{http.MethodGet, "/" + p.code, slackbot},
		{http.MethodGet, "/raw/" + p.code, slackbot},
		{http.MethodGet, "/" + p.code, nil},
		{http.MethodGet, "/raw/" + p.code, []string{"Accept", "text/plain"}},
		{http.MethodGet, "/" + p.code, []string{"Accept", "application/json"}},
		{http.MethodHead, "/" + p.code, slackbot},
		{http.MethodHead, "/raw/" + p.code, nil},
	} {
		r := e.do(e.request(tt.method, tt.path, nil, tt.headers...))
		var got struct{ Type, Detail string }
		_ = json.Unmarshal(r.body, &got)
		wantDetail := tt.method == http.MethodHead || strings.Contains(got.Detail, "curl -X POST "+p.url)
		if r.StatusCode != http.StatusConflict || r.Header.Get("Content-Type") != "application/problem+json" ||
			strings.Contains(r.text(), secret) || !wantDetail ||
			tt.method == http.MethodGet && got.Type != "/problems/burn-after-reading" {
			t.Errorf("%s %s %v: %d %s %s; want 409 burn-after-reading saying curl -X POST %s",
				tt.method, tt.path, tt.headers, r.StatusCode, r.Header.Get("Content-Type"), r.body, p.url)
		}
	}
	if r := e.page("/" + p.code); r.StatusCode != http.StatusOK || strings.Contains(r.text(), secret) ||
		!strings.Contains(r.text(), "burns after reading") {
		t.Errorf("a browser's GET: %d, want the page that asks first, without the content", r.StatusCode)
	}
	if r := e.page("/raw/" + p.code); r.StatusCode != http.StatusConflict || strings.Contains(r.text(), secret) {
		t.Errorf("a browser's GET of the raw URL: %d, want a 409 page without the content", r.StatusCode)
	}
	// Whatever it asks for, a POST answers exactly the bytes, once.
	r := e.do(e.request(http.MethodPost, "/"+p.code, nil, "Accept", browserAccept))
	if r.StatusCode != http.StatusOK || r.text() != secret || r.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("ETag") != "" {
		t.Fatalf("POST after the GETs: %d %s %q, want 200 and exactly the bytes, not to be stored", r.StatusCode,
			r.Header.Get("Content-Type"), r.body)
	}
	for _, path := range []string{"/" + p.code, "/raw/" + p.code} {
		if r := e.do(e.request(http.MethodPost, path, nil)); r.StatusCode != http.StatusGone {
			t.Errorf("POST %s after it was read: %d, want 410", path, r.StatusCode)
		}
	}
}

// TestBurnPostRaw: curl -X POST on the raw URL answers the bytes whatever its Accept, then 410.
func TestBurnPostRaw(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, accept := range []string{"", "*/*", "application/json", browserAccept} {
		content := "raw, for " + accept
		p := e.createBurning(content)
		r := e.do(e.request(http.MethodPost, "/raw/"+p.code, nil, "Accept", accept))
		if r.StatusCode != http.StatusOK || r.text() != content {
			t.Errorf("POST /raw/ with Accept %q: %d %q, want the bytes", accept, r.StatusCode, r.body)
		}
		if r := e.get("/raw/"+p.code, "Accept", accept); r.StatusCode != http.StatusGone {
			t.Errorf("GET after the POST with Accept %q: %d, want 410", accept, r.StatusCode)
		}
	}
}

// TestPostOnPasteThatDoesNotBurn: a paste any GET reads has nothing for a POST to take: 405, with
// the methods the address has in Allow, and the paste is untouched.
func TestPostOnPasteThatDoesNotBurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("read me often", "")
	for _, tt := range []struct{ path, allow string }{
		{"/" + p.code, "GET, HEAD, PUT, DELETE"},
		{"/raw/" + p.code, "GET, HEAD"},
	} {
		r := e.do(e.request(http.MethodPost, tt.path, nil))
		if r.StatusCode != http.StatusMethodNotAllowed || r.Header.Get("Allow") != tt.allow ||
			!strings.Contains(r.text(), "/problems/method-not-allowed") {
			t.Errorf("POST %s: %d, Allow %q, %s; want 405, Allow %q", tt.path, r.StatusCode, r.Header.Get("Allow"), r.body, tt.allow)
		}
	}
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusOK || r.text() != "read me often" {
		t.Errorf("after the POSTs: %d %q", r.StatusCode, r.body)
	}
}

// TestBurnPageButtonPostsToPasteURL: the page's button posts to the paste's own URL, and a
// browser posting it gets the page showing the content, where curl's POST gets the bytes.
func TestBurnPageButtonPostsToPasteURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.createBurning("<b>shown on the page</b>")
	page := e.page("/" + p.code).text()
	form := regexp.MustCompile(`<form method="post" action="([^"]*)">\s*<input type="hidden" name="([^"]+)" value="([^"]+)">`).
		FindStringSubmatch(page)
	if form == nil || form[1] != "/"+p.code {
		t.Fatalf("the page's form: %v, want one posting to /%s with a hidden field", form, p.code)
	}
	body := url.Values{form[2]: {form[3]}}.Encode()
	r := e.send(e.request(http.MethodPost, form[1], strings.NewReader(body),
		"Content-Type", "application/x-www-form-urlencoded", "Accept", browserAccept))
	if r.StatusCode != http.StatusOK || !strings.Contains(r.text(), "&lt;b&gt;shown on the page&lt;/b&gt;") ||
		!strings.Contains(r.text(), "only copy") {
		t.Fatalf("the button: %d, want the page with the content and the burned notice", r.StatusCode)
	}
	checkPageHeaders(t, r, "no-store")
	if r := e.send(e.request(http.MethodPost, form[1], strings.NewReader(body),
		"Content-Type", "application/x-www-form-urlencoded", "Accept", browserAccept)); r.StatusCode != http.StatusGone {
		t.Errorf("the button again: %d, want 410", r.StatusCode)
	}
	// curl -d sends a form too, but not the page's field: it gets the bytes.
	q := e.createBurning("curl -d")
	r = e.do(e.request(http.MethodPost, "/"+q.code, strings.NewReader("a=b"), "Content-Type", "application/x-www-form-urlencoded"))
	if r.StatusCode != http.StatusOK || r.text() != "curl -d" {
		t.Errorf("curl -d -X POST: %d %q, want the bytes", r.StatusCode, r.body)
	}
}
