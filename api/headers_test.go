package api_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestHeadWhereverGet: HEAD is allowed wherever GET is (RFC 9110, section 9.1), and answers the
// headers its GET would, without the body.
func TestHeadWhereverGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 0))
	p := e.create("for HEAD", "")
	css := regexp1(t, e.page("/").text(), `href="(/static/[^"]+\.css)"`)
	admin := []string{"Authorization", "Bearer " + adminToken}
	for _, tt := range []struct {
		path    string
		headers []string
	}{
		{"/", nil},
		{"/", []string{"Accept", browserAccept}},
		{"/" + p.code, []string{"Accept", browserAccept}},
		{"/api/v1/pastes/" + p.code, nil},
		{"/healthz", nil},
		{"/readyz", nil},
		{"/metrics", nil},
		{"/openapi.yaml", nil},
		{"/problems", nil},
		{"/problems/gone", nil},
		{css, nil},
		{"/admin/cleanup/backlog", admin},
		{"/admin/sign-in", []string{"Accept", browserAccept}},
	} {
		get := e.get(tt.path, tt.headers...)
		head := e.do(e.request(http.MethodHead, tt.path, nil, tt.headers...))
		if head.StatusCode != get.StatusCode || len(head.body) != 0 {
			t.Errorf("HEAD %s %v: %d with %d bytes of body; GET answers %d", tt.path, tt.headers, head.StatusCode,
				len(head.body), get.StatusCode)
		}
		for _, h := range []string{"Content-Type", "Content-Length", "Cache-Control", "Vary", "X-Robots-Tag", "Content-Security-Policy"} {
			if head.Header.Get(h) != get.Header.Get(h) {
				t.Errorf("HEAD %s %v: %s %q, GET's %q", tt.path, tt.headers, h, head.Header.Get(h), get.Header.Get(h))
			}
		}
	}
}

func regexp1(t *testing.T, s, expr string) string {
	t.Helper()
	m := regexp.MustCompile(expr).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in %.200s", expr, s)
	}
	return m[1]
}

// TestSpecHasHeadWhereverGet: openapi.yaml documents HEAD on every address that has GET.
func TestSpecHasHeadWhereverGet(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range doc.Paths.Map() {
		if item.Get != nil && item.Head == nil {
			t.Errorf("openapi.yaml: %s has GET and no HEAD", path)
		}
	}
}

// TestVaryAccept: an answer chosen by the Accept header says so, so that a shared cache never
// answers a browser with the text or curl with the page; errors that are a page or problem
// details by Accept too.
func TestVaryAccept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("cached by Accept", "")
	for _, tt := range []struct {
		method, path string
		headers      []string
		vary         bool
	}{
		{http.MethodGet, "/", nil, true},
		{http.MethodGet, "/", []string{"Accept", browserAccept}, true},
		{http.MethodHead, "/", nil, true},
		{http.MethodGet, "/" + p.code, nil, true},
		{http.MethodGet, "/" + p.code, []string{"Accept", browserAccept}, true},
		{http.MethodHead, "/" + p.code, nil, true},
		{http.MethodHead, "/" + p.code, []string{"Accept", browserAccept}, true},
		{http.MethodGet, "/Abcdefghijk", nil, true},
		{http.MethodGet, "/raw/Abcdefghijk", []string{"Accept", browserAccept}, true},
		{http.MethodGet, "/raw/" + p.code, nil, false}, // the text for everyone
		{http.MethodGet, "/api/v1/pastes/Abcdefghijk", nil, false},
	} {
		r := e.do(e.request(tt.method, tt.path, nil, tt.headers...))
		if got := slices.Contains(varies(r.Header), "Accept"); got != tt.vary {
			t.Errorf("%s %s %v: %d, Vary %q; want Accept named: %v", tt.method, tt.path, tt.headers, r.StatusCode,
				r.Header.Values("Vary"), tt.vary)
		}
	}
	etag := e.get("/" + p.code).Header.Get("ETag")
	if r := e.get("/"+p.code, "If-None-Match", etag); r.StatusCode != http.StatusNotModified ||
		!slices.Contains(varies(r.Header), "Accept") {
		t.Errorf("304: %d, Vary %q; want Vary: Accept as the 200 has", r.StatusCode, r.Header.Values("Vary"))
	}
}

func varies(h http.Header) []string {
	var names []string
	for _, v := range h.Values("Vary") {
		for _, n := range strings.Split(v, ",") {
			names = append(names, strings.TrimSpace(n))
		}
	}
	return names
}

// TestNoIndex: raw and JSON answers tell search engines not to index them; the pages say so in
// their markup already.
func TestNoIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("public, not for search engines", "")
	for _, tt := range []struct {
		path    string
		headers []string
	}{
		{"/raw/" + p.code, nil},
		{"/" + p.code, nil},
		{"/raw/" + p.code + "?download", nil},
		{"/api/v1/pastes/" + p.code, nil},
		{"/api/v1/pastes/Abcdefghijk", nil},
		{"/raw/Abcdefghijk", nil},
	} {
		if r := e.get(tt.path, tt.headers...); r.Header.Get("X-Robots-Tag") != "noindex" {
			t.Errorf("GET %s: %d, X-Robots-Tag %q, want noindex", tt.path, r.StatusCode, r.Header.Get("X-Robots-Tag"))
		}
	}
	if r := e.do(e.request(http.MethodHead, "/raw/"+p.code, nil)); r.Header.Get("X-Robots-Tag") != "noindex" {
		t.Errorf("HEAD /raw/: X-Robots-Tag %q, want noindex", r.Header.Get("X-Robots-Tag"))
	}
	burning := e.create("burns, not for search engines either", "?burn=true")
	if r := e.do(e.request(http.MethodPost, "/raw/"+burning.code, nil)); r.StatusCode != http.StatusOK ||
		r.Header.Get("X-Robots-Tag") != "noindex" {
		t.Errorf("POST /raw/ of a burning paste: %d, X-Robots-Tag %q, want noindex", r.StatusCode, r.Header.Get("X-Robots-Tag"))
	}
}
