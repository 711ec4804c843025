package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"pastebin/api"
)

// TestCrossSiteRequestsRefused: a request with an unsafe method that a browser says another site
// sent is refused on every route, whatever its Accept or Content-Type, before it changes anything:
// 403 cross-site-request, as problem details, or a page to a browser asking for one. Clients that
// send no fetch metadata (curl, API clients) and the site's own pages are unaffected.
func TestCrossSiteRequestsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 0))
	p := e.create("kept", "")
	form := "application/x-www-form-urlencoded"
	bearer := "Bearer " + adminToken
	requests := []struct {
		method, path, contentType, body, auth string
	}{
		{http.MethodPost, "/", form, url.Values{"content": {"forged"}}.Encode(), ""},
		{http.MethodPost, "/", "text/plain", "forged", ""},
		{http.MethodPost, "/", "multipart/form-data; boundary=XX", "--XX\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\nforged\r\n--XX--\r\n", ""},
		{http.MethodPut, "/forged.txt", "", "forged", ""},
		{http.MethodPost, "/api/v1/pastes", "application/json", `{"content":"forged"}`, ""},
		{http.MethodPost, "/documents", form, url.Values{"content": {"forged"}}.Encode(), ""},
		{http.MethodPost, "/documents", "text/plain", "forged", ""},
		{http.MethodDelete, "/api/v1/pastes/" + p.code, "", "", "Bearer " + p.token},
		{http.MethodDelete, "/" + p.code, "", "", "Bearer " + p.token},
		{http.MethodPost, "/" + p.code + "/delete", form, url.Values{"token": {p.token}}.Encode(), ""},
		{http.MethodPost, "/" + p.code + "/burn", form, "", ""},
		{http.MethodPost, "/" + p.code, "", "", ""},
		{http.MethodPost, "/raw/" + p.code, "", "", ""},
		{http.MethodDelete, "/admin/pastes/" + p.code + "?reason=forged", "", "", bearer},
		{http.MethodPost, "/admin/sign-in", form, url.Values{"token": {adminToken}}.Encode(), ""},
	}
	senders := map[string][]string{
		"cross-site":                   {"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"},
		"same-site":                    {"Sec-Fetch-Site", "same-site", "Origin", "https://sub." + strings.TrimPrefix(e.srv.URL, "http://")},
		"old browser, another origin":  {"Origin", "https://evil.example"},
		"cross-site, no Origin at all": {"Sec-Fetch-Site", "cross-site"},
	}
	for name, headers := range senders {
		for _, accept := range []string{"*/*", "application/json", browserAccept} {
			for _, rq := range requests {
				h := append([]string{"Accept", accept, "Content-Type", rq.contentType, "Authorization", rq.auth}, headers...)
				r := e.send(e.request(rq.method, rq.path, strings.NewReader(rq.body), h...))
				// A browser gets a page, but from the JSON APIs, whose clients always get problem
				// details; the console's forms always get the console's page.
				console := strings.HasPrefix(rq.path, "/admin/") && rq.auth == ""
				page := console || accept == browserAccept && !strings.HasPrefix(rq.path, "/api/") && !strings.HasPrefix(rq.path, "/admin/")
				checkCrossSiteRefused(t, name+": "+rq.method+" "+rq.path+" Accept "+accept, r, page)
			}
		}
	}
	if n := e.count(`SELECT count(*) FROM pastes`); n != 1 {
		t.Errorf("%d pastes stored, want only the first one", n)
	}
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusOK {
		t.Errorf("refused requests took the paste: %d", r.StatusCode)
	}

	for _, headers := range [][]string{
		nil, // curl
		{"Sec-Fetch-Site", "same-origin", "Origin", e.srv.URL},
		{"Sec-Fetch-Site", "none"}, // typed into the address bar, a bookmark
		{"Origin", e.srv.URL},      // an old browser on the site's own page
	} {
		r := e.send(e.request(http.MethodPost, "/", strings.NewReader("from a friend"), headers...))
		if r.StatusCode != http.StatusCreated {
			t.Errorf("create with %q: %d, want 201: %s", headers, r.StatusCode, r.body)
		}
	}
}

func checkCrossSiteRefused(t *testing.T, what string, r response, page bool) {
	t.Helper()
	if r.StatusCode != http.StatusForbidden {
		t.Errorf("%s: %d, want 403", what, r.StatusCode)
		return
	}
	if page {
		if ct := r.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" || !strings.Contains(r.text(), "another site") {
			t.Errorf("%s: %s, want a page saying why: %.200s", what, ct, r.body)
		}
		return
	}
	var p struct{ Type string }
	if err := json.Unmarshal(r.body, &p); err != nil || p.Type != "/problems/cross-site-request" ||
		r.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("%s: %s %s, want problem details of type cross-site-request", what, r.Header.Get("Content-Type"), r.body)
	}
}

// TestCrossSiteTrustsBaseURL: behind a proxy that rewrites Host, an old browser's Origin is the
// public base URL, not the Host the server sees: that origin is the site's own.
func TestCrossSiteTrustsBaseURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *api.Config) { c.BaseURL = "https://paste.example" }))
	r := e.send(e.request(http.MethodPost, "/", strings.NewReader("from the public page"), "Origin", "https://paste.example"))
	if r.StatusCode != http.StatusCreated {
		t.Errorf("create from the base URL's origin: %d, want 201: %s", r.StatusCode, r.body)
	}
	r = e.send(e.request(http.MethodPost, "/", strings.NewReader("from elsewhere"), "Origin", "https://paste.example.evil"))
	checkCrossSiteRefused(t, "create from another origin", r, false)
}
