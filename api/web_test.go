package api_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"pastebin/api"
	"pastebin/paste"
)

// browserAccept is what Chromium sends when it navigates.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"

const wantCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func withExpiry(p paste.ExpiryPolicy) envOption { return func(c *api.Config, _ *env) { c.Expiry = p } }

// page GETs path as a browser would.
func (e *env) page(path string, headers ...string) response {
	e.t.Helper()
	return e.get(path, append([]string{"Accept", browserAccept}, headers...)...)
}

// send is do without following redirects, so a test sees the 303 itself.
func (e *env) send(req *http.Request) response {
	e.t.Helper()
	client := *e.srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	e.checkSpec(req, resp, body)
	return response{Response: resp, body: body}
}

func checkPageHeaders(t *testing.T, r response, cacheControl string) {
	t.Helper()
	want := map[string]string{
		"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": wantCSP,
		"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": cacheControl,
	}
	for h, v := range want {
		if got := r.Header.Get(h); got != v {
			t.Errorf("%s: got %q, want %q", h, got, v)
		}
	}
}

func TestWebIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.page("/")
	if r.StatusCode != http.StatusOK {
		t.Fatalf("GET / as a browser: %d", r.StatusCode)
	}
	checkPageHeaders(t, r, "no-cache")
	for _, want := range []string{
		`<form class="create" id="create" method="post" action="/" enctype="multipart/form-data">`,
		`<textarea id="content" name="content"`, `<input id="file" name="file" type="file"`,
		`<input id="burn" name="burn" type="checkbox"`, `<option value="" selected>Automatic</option>`,
		`<input id="title" name="title"`,
	} {
		if !strings.Contains(r.text(), want) {
			t.Errorf("the form lacks %s", want)
		}
	}
	if strings.Contains(r.text(), "<script>") || strings.Contains(r.text(), "style=") {
		t.Errorf("the page has an inline script or style, which its CSP forbids")
	}
	if curl := e.get("/", "Accept", "*/*"); !strings.HasPrefix(curl.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("curl's GET / answered %s, want the usage text", curl.Header.Get("Content-Type"))
	}
}

func TestWebExpiryChoices(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy paste.ExpiryPolicy
		want   string // the options, the selected one starred
	}{
		{"test default", paste.ExpiryPolicy{Default: 24 * time.Hour, Max: 30 * 24 * time.Hour}, "10m 1h *1d 1w 30d"},
		{"never allowed and default", paste.ExpiryPolicy{Max: 365 * 24 * time.Hour, AllowNever: true}, "10m 1h 1d 1w 30d *never"},
		{"capped at a day, odd default", paste.ExpiryPolicy{Default: 2 * time.Hour, Max: 24 * time.Hour}, "10m 1h *2h 1d"},
	}
	option := regexp.MustCompile(`<option value="([^"]+)"( selected)?>[^<]*</option>`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, withExpiry(tt.policy))
			page := e.page("/").text()
			sel := page[strings.Index(page, `<select id="expires_in"`):]
			sel = sel[:strings.Index(sel, "</select>")]
			var got []string
			for _, m := range option.FindAllStringSubmatch(sel, -1) {
				if m[2] != "" {
					m[1] = "*" + m[1]
				}
				got = append(got, m[1])
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("expiry options %q, want %q", strings.Join(got, " "), tt.want)
			}
		})
	}
}

func TestWebAssets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	links := regexp.MustCompile(`(?:href|src)="(/static/[0-9a-f]{12}/([a-z.]+))"`).FindAllStringSubmatch(e.page("/").text(), -1)
	if len(links) < 4 {
		t.Fatalf("the page links %d static files, want the two stylesheets, the script and the icon", len(links))
	}
	types := map[string]string{".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}
	for _, l := range links {
		r := e.get(l[1])
		ext := l[2][strings.LastIndex(l[2], "."):]
		if r.StatusCode != 200 || r.Header.Get("Content-Type") != types[ext] || len(r.body) == 0 {
			t.Errorf("%s: %d %s, %d bytes", l[1], r.StatusCode, r.Header.Get("Content-Type"), len(r.body))
		}
		if got := r.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("%s: Cache-Control %q", l[1], got)
		}
	}
	if r := e.get("/static/000000000000/app.css"); r.StatusCode != http.StatusNotFound {
		t.Errorf("a stale hash answered %d, want 404", r.StatusCode)
	}
	if r := e.get("/static/" + links[0][1][8:20] + "/nothing.css"); r.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown file answered %d, want 404", r.StatusCode)
	}
}

func TestWebPageEscapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`
	p := e.create(evil, "?title="+url.QueryEscape(evil)+"&filename=x.html")
	page := e.page("/" + p.code).text()
	for _, bad := range []string{"<script>alert", "<img src=x", "onerror=alert(2)>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;") {
		t.Errorf("the page does not show the paste's markup as text")
	}
}

func TestWebBurnNeedsConfirmation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("secret words", "?burn=true")
	for i := 0; i < 2; i++ { // crawlers and link previews GET the page, maybe more than once
		r := e.page("/" + p.code)
		if r.StatusCode != 200 || !strings.Contains(r.text(), "burns after reading") || strings.Contains(r.text(), "secret words") {
			t.Fatalf("GET the page of a burning paste: %d, want the confirmation without the content", r.StatusCode)
		}
		checkPageHeaders(t, r, "no-store")
	}
	if r := e.do(e.request(http.MethodHead, "/"+p.code, nil, "Accept", browserAccept)); r.StatusCode != 200 {
		t.Errorf("HEAD: %d", r.StatusCode)
	}
	if r := e.get("/api/v1/pastes/" + p.code); r.StatusCode != 200 {
		t.Fatalf("the paste was burned by a GET or HEAD of its page: metadata answers %d", r.StatusCode)
	}
	r := e.send(e.request(http.MethodPost, "/"+p.code+"/burn", nil, "Accept", browserAccept))
	if r.StatusCode != 200 || !strings.Contains(r.text(), "secret words") || !strings.Contains(r.text(), "only copy") {
		t.Fatalf("confirming: %d, want the content with the burned notice", r.StatusCode)
	}
	checkPageHeaders(t, r, "no-store")
	if r := e.send(e.request(http.MethodPost, "/"+p.code+"/burn", nil, "Accept", browserAccept)); r.StatusCode != http.StatusGone {
		t.Errorf("a second confirmation: %d, want 410", r.StatusCode)
	}
	if r := e.page("/" + p.code); r.StatusCode != http.StatusGone || !strings.Contains(r.text(), "burned after reading") {
		t.Errorf("the page after burning: %d, want 410 saying it was burned", r.StatusCode)
	}
	plain := e.create("plain", "")
	if r := e.send(e.request(http.MethodPost, "/"+plain.code+"/burn", nil, "Accept", browserAccept)); r.StatusCode != http.StatusSeeOther {
		t.Errorf("burning a paste that does not burn: %d, want 303 to its page", r.StatusCode)
	}
}

func TestWebDeleteForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("to delete", "")
	post := func(form url.Values, headers ...string) response {
		return e.send(e.request(http.MethodPost, "/"+p.code+"/delete", strings.NewReader(form.Encode()),
			append([]string{"Content-Type", "application/x-www-form-urlencoded", "Accept", browserAccept}, headers...)...))
	}
	// A cross-site form cannot use the token cookie of a fresh create: only the typed field counts.
	if r := post(url.Values{}, "Cookie", "paste_token="+p.token); r.StatusCode != http.StatusBadRequest {
		t.Errorf("no token field, token cookie: %d, want 400", r.StatusCode)
	}
	if r := post(url.Values{"token": {strings.Repeat("A", 43)}}); r.StatusCode != http.StatusForbidden ||
		!strings.Contains(r.text(), "Wrong delete token") || !strings.Contains(r.text(), `href="/`+p.code+`"`) {
		t.Errorf("wrong token: %d, want 403 page leading back to the paste", r.StatusCode)
	}
	if r := e.get("/raw/" + p.code); r.StatusCode != 200 {
		t.Fatalf("refused deletes deleted the paste: %d", r.StatusCode)
	}
	r := post(url.Values{"token": {" " + p.token + " "}})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/"+p.code {
		t.Fatalf("right token: %d to %q, want 303 to the paste's page", r.StatusCode, r.Header.Get("Location"))
	}
	gone := e.page("/" + p.code)
	if gone.StatusCode != http.StatusGone || !strings.Contains(gone.text(), "deleted by its owner") {
		t.Errorf("the page after delete: %d", gone.StatusCode)
	}
	checkPageHeaders(t, gone, "no-store")
}

// Invariants 4 and 5 hold for pages as for raw reads, through the cache too.
func TestWebNeverServesExpiredOrDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	exp := e.create("short-lived", "?expires_in=10m")
	del := e.create("deleted soon", "")
	for _, code := range []string{exp.code, del.code} {
		if r := e.page("/" + code); r.StatusCode != 200 {
			t.Fatalf("fresh paste page: %d", r.StatusCode)
		}
	}
	e.clock.advance(11 * time.Minute)
	e.exec(`UPDATE pastes SET expires_at = now() - interval '1 minute' WHERE short_code = $1`, exp.code)
	if r := e.delete(del.code, del.token); r.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", r.StatusCode)
	}
	for _, code := range []string{exp.code, del.code} {
		r := e.page("/" + code)
		if r.StatusCode != http.StatusGone || strings.Contains(r.text(), "short-lived") || strings.Contains(r.text(), "deleted soon") {
			t.Errorf("/%s after expiry or delete: %d", code, r.StatusCode)
		}
		if !strings.Contains(r.text(), "This paste is gone") {
			t.Errorf("/%s: not the friendly 410 page", code)
		}
	}
}

func TestWebErrorPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		path   string
		status int
		want   string
	}{
		{"/AAAAAAAAAAA", 404, "No such paste"},
		{"/nope", 404, "No such paste"},
		{"/raw/AAAAAAAAAAA", 404, "No such paste"},
		{"/no/such/page", 404, "Page not found"},
	}
	for _, tt := range tests {
		r := e.page(tt.path)
		if r.StatusCode != tt.status || !strings.Contains(r.text(), tt.want) || !strings.Contains(r.text(), `href="/"`) {
			t.Errorf("%s: %d, want %d page saying %q", tt.path, r.StatusCode, tt.status, tt.want)
		}
		checkPageHeaders(t, r, "no-store")
	}
	// The JSON APIs answer problem details whatever the client accepts.
	for _, path := range []string{"/api/v1/pastes/AAAAAAAAAAA", "/admin/cleanup/runs"} {
		if r := e.page(path); r.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s answered a browser with %s", path, r.Header.Get("Content-Type"))
		}
	}
}

func TestWebLargeAndBinaryPastes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMaxSize(3<<20))
	big := e.create(strings.Repeat("a", 1<<20+1), "")
	bin := e.create("\x00\x01\x02binary", "")
	for code, want := range map[string]string{big.code: "too large to show", bin.code: "not text"} {
		r := e.page("/" + code)
		if r.StatusCode != 200 || !strings.Contains(r.text(), want) || !strings.Contains(r.text(), "/raw/"+code+"?download") {
			t.Errorf("/%s: %d, want the page saying %q with a download link", code, r.StatusCode, want)
		}
	}
}
