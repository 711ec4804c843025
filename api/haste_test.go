package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"pastebin/envelope"
)

// hasteCreate posts body to /documents as a haste client does and returns the key it answered.
func (e *env) hasteCreate(body, query string, headers ...string) string {
	e.t.Helper()
	r := e.do(e.request(http.MethodPost, "/documents"+query, strings.NewReader(body), headers...))
	var got struct{ Key string }
	if err := json.Unmarshal(r.body, &got); r.StatusCode != http.StatusOK || err != nil || got.Key == "" {
		e.t.Fatalf("POST /documents: %d %s (%v); want 200 and a key", r.StatusCode, r.body, err)
	}
	return got.Key
}

// TestHasteAPI: haste-server's API creates through the same flow as every create (dedup, options,
// the delete token) and reads back what it stored, by key and by the links haste clients print.
func TestHasteAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const text = "console.log(\"hi\");\n"
	r := e.do(e.request(http.MethodPost, "/documents", strings.NewReader(text), "Content-Type", "text/plain"))
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/json" ||
		len(r.Header.Get("Paste-Delete-Token")) != 43 || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("POST /documents: %d %v %s", r.StatusCode, r.Header, r.body)
	}
	var created map[string]string
	if err := json.Unmarshal(r.body, &created); err != nil || len(created) != 1 || len(created["key"]) != 11 {
		t.Fatalf("POST /documents answered %s, want exactly {\"key\": <code>}", r.body)
	}
	key := created["key"]
	for _, path := range []string{"/documents/" + key, "/documents/" + key + ".js"} {
		r := e.get(path)
		var doc map[string]string
		if err := json.Unmarshal(r.body, &doc); r.StatusCode != http.StatusOK || err != nil ||
			doc["key"] != key || doc["data"] != text || len(doc) != 2 {
			t.Errorf("GET %s: %d %s; want {\"key\", \"data\"} of the paste", path, r.StatusCode, r.body)
		}
	}
	if got := e.get("/raw/" + key).text(); got != text {
		t.Errorf("GET /raw/%s: %q", key, got)
	}
	// The owner's delete token deletes it, as any paste's.
	if d := e.delete(key, r.Header.Get("Paste-Delete-Token")); d.StatusCode != http.StatusNoContent {
		t.Errorf("delete with the token of the haste create: %d", d.StatusCode)
	}
	if r := e.get("/documents/" + key); r.StatusCode != http.StatusGone || problemType(t, r) != "/problems/gone" {
		t.Errorf("GET /documents of a deleted paste: %d %s", r.StatusCode, r.body)
	}
	if r := e.get("/documents/Abcdefghijk"); r.StatusCode != http.StatusNotFound {
		t.Errorf("GET /documents of an unknown key: %d", r.StatusCode)
	}
	// Text that S3 holds compressed comes back as it was sent.
	long := strings.Repeat("fmt.Println(\"a line that compresses well\")\n", 400)
	key = e.hasteCreate(long, "")
	if enc := e.contentEncoding(long); enc != "zstd" {
		t.Fatalf("the long text is stored as %q, want zstd", enc)
	}
	var doc struct{ Data string }
	if _ = json.Unmarshal(e.get("/documents/"+key).body, &doc); doc.Data != long {
		t.Errorf("GET /documents of a compressed paste: %d bytes, want the %d sent", len(doc.Data), len(long))
	}
}

// contentEncoding is how S3 holds the content of those bytes ("" for as they are).
func (e *env) contentEncoding(content string) string {
	e.t.Helper()
	var enc string
	err := e.store.Pool().QueryRow(context.Background(),
		`SELECT coalesce(encoding, '') FROM content WHERE content_hash = sha256($1::bytea)`, []byte(content)).Scan(&enc)
	if err != nil {
		e.t.Fatal(err)
	}
	return enc
}

// TestHasteCreateTakesTheRawBody: whatever the Content-Type, the body is the paste, a browser's
// form included (so no other site's form is a create here either: TestCrossSiteRequestsRefused);
// curl's options apply, and the same bytes are stored once.
func TestHasteCreateTakesTheRawBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	form := url.Values{"content": {"not a field here"}, "title": {"nor this"}}.Encode()
	for _, tt := range []struct {
		name, body string
		headers    []string
	}{
		{"no type", "plain bytes", nil},
		{"a browser's form", form, []string{"Content-Type", "application/x-www-form-urlencoded", "Accept", browserAccept}},
		{"multipart", "--XX\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nx\r\n--XX--\r\n", []string{"Content-Type", "multipart/form-data; boundary=XX"}},
		{"JSON", `{"content": "not the paste"}`, []string{"Content-Type", "application/json"}},
	} {
		key := e.hasteCreate(tt.body, "", tt.headers...)
		if got := e.get("/raw/" + key).text(); got != tt.body {
			t.Errorf("%s: stored %q, want the body as it came", tt.name, got)
		}
	}
	key := e.hasteCreate("package main\n", "?title=Main&expires_in=1h", "Paste-Language", "go", "Paste-Filename", "main.go")
	var meta struct {
		Title, Language, Filename string
		ExpiresAt                 time.Time `json:"expires_at"`
	}
	_ = json.Unmarshal(e.get("/api/v1/pastes/"+key).body, &meta)
	if meta.Title != "Main" || meta.Language != "go" || meta.Filename != "main.go" || !near(time.Until(meta.ExpiresAt), time.Hour) {
		t.Errorf("options: %+v, want the title, language, file name and hour asked for", meta)
	}
	e.hasteCreate("package main\n", "")
	e.create("package main\n", "")
	if n := e.refCount("package main\n"); n != 3 {
		t.Errorf("three creates of the same bytes, two through /documents: ref_count %d, want 3", n)
	}
}

// TestHasteRefusals: the haste routes refuse what every create and read refuses, with problem
// details, and a GET of a paste that burns after reading never has its data nor takes it.
func TestHasteRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMaxSize(16))
	burn := e.create("read me once", "?burn=true")
	for _, tt := range []struct {
		method, path, body string
		status             int
		typ                string
	}{
		{http.MethodPost, "/documents", "", http.StatusBadRequest, "empty-content"},
		{http.MethodPost, "/documents", strings.Repeat("x", 17), http.StatusRequestEntityTooLarge, "too-large"},
		{http.MethodPost, "/documents?expires_in=forever", "x", http.StatusBadRequest, "invalid-expiry"},
		{http.MethodPost, "/documents?title=%01", "x", http.StatusBadRequest, "malformed-request"},
		{http.MethodGet, "/documents/" + burn.code, "", http.StatusConflict, "burn-after-reading"},
		{http.MethodGet, "/documents/" + burn.code + ".txt", "", http.StatusConflict, "burn-after-reading"},
		{http.MethodGet, "/documents/nope", "", http.StatusNotFound, "not-found"},
	} {
		r := e.do(e.request(tt.method, tt.path, strings.NewReader(tt.body)))
		if r.StatusCode != tt.status || problemType(t, r) != "/problems/"+tt.typ || strings.Contains(r.text(), "read me once") {
			t.Errorf("%s %s: %d %s; want %d %s", tt.method, tt.path, r.StatusCode, r.body, tt.status, tt.typ)
		}
	}
	if r := e.do(e.request(http.MethodHead, "/documents/"+burn.code, nil)); r.StatusCode != http.StatusConflict {
		t.Errorf("HEAD /documents of a burn paste: %d, want 409", r.StatusCode)
	}
	if r := e.do(e.request(http.MethodPost, "/raw/"+burn.code, nil)); r.StatusCode != http.StatusOK || r.text() != "read me once" {
		t.Errorf("the burn paste after the haste GETs: %d %q; want it still there for its POST", r.StatusCode, r.body)
	}
}

// TestHasteViewLimitsAndEncryption: a haste create takes a view limit as POST / does (query or
// header, refused out of range), and haste's GET of a view-limited paste answers 409 with the
// type the raw read gives it, burn-after-reading or view-limited, taking no view. An encrypted
// body is refused (400) and nothing is stored: haste's JSON carries text, and ciphertext is bytes.
func TestHasteViewLimitsAndEncryption(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	byQuery := e.hasteCreate("three by query", "?max_views=3")
	byHeader := e.hasteCreate("three by header", "", "Paste-Max-Views", "3")
	burn := e.hasteCreate("burn by haste", "?burn=true")
	for _, tt := range []struct{ key, typ, text string }{
		{byQuery, "view-limited", "three by query"},
		{byHeader, "view-limited", "three by header"},
		{burn, "burn-after-reading", "burn by haste"},
	} {
		var meta struct {
			MaxViews  int `json:"max_views"`
			ViewsLeft int `json:"views_left"`
		}
		_ = json.Unmarshal(e.get("/api/v1/pastes/"+tt.key).body, &meta)
		if want := map[bool]int{true: 1, false: 3}[tt.key == burn]; meta.MaxViews != want || meta.ViewsLeft != want {
			t.Errorf("%s: max_views %d, views_left %d; want %d of %d", tt.text, meta.MaxViews, meta.ViewsLeft, want, want)
		}
		for _, path := range []string{"/documents/" + tt.key, "/documents/" + tt.key + ".txt", "/raw/" + tt.key} {
			r := e.get(path)
			if r.StatusCode != http.StatusConflict || problemType(t, r) != "/problems/"+tt.typ || strings.Contains(r.text(), tt.text) {
				t.Errorf("GET %s of %q: %d %s; want 409 %s without the text", path, tt.text, r.StatusCode, r.body, tt.typ)
			}
		}
		if r := e.do(e.request(http.MethodHead, "/documents/"+tt.key, nil)); r.StatusCode != http.StatusConflict {
			t.Errorf("HEAD /documents of %q: %d, want 409", tt.text, r.StatusCode)
		}
		r := e.do(e.request(http.MethodPost, "/raw/"+tt.key, nil))
		if want := map[bool]string{true: "0", false: "2"}[tt.key == burn]; r.StatusCode != http.StatusOK || r.text() != tt.text || r.Header.Get("Paste-Views-Left") != want {
			t.Errorf("POST /raw of %q after the GETs: %d %q, %s views left; want %s", tt.text, r.StatusCode, r.body, r.Header.Get("Paste-Views-Left"), want)
		}
	}
	for _, q := range []string{"?max_views=0", "?max_views=1001", "?max_views=two", "?burn=true&max_views=2"} {
		if r := e.do(e.request(http.MethodPost, "/documents"+q, strings.NewReader("x"))); r.StatusCode != http.StatusBadRequest {
			t.Errorf("POST /documents%s: %d, want 400 as POST / answers", q, r.StatusCode)
		}
	}
	body, format, _ := seal(t, envelope.Paste{Text: []byte("secret")}, "")
	for _, tt := range []struct{ query, header string }{
		{"", format.String()},
		{"?encryption=" + url.QueryEscape(format.String()), ""},
	} {
		var headers []string
		if tt.header != "" {
			headers = []string{"Paste-Encryption", tt.header}
		}
		r := e.do(e.request(http.MethodPost, "/documents"+tt.query, bytes.NewReader(body), headers...))
		if r.StatusCode != http.StatusBadRequest || problemType(t, r) != "/problems/malformed-request" || !strings.Contains(r.text(), "POST /") {
			t.Errorf("an encrypted haste create (%q, %q): %d %s; want 400 naming POST /", tt.query, tt.header, r.StatusCode, r.body)
		}
	}
	if n := e.refCount(string(body)); n != -1 {
		t.Errorf("the refused ciphertext has a content row (ref_count %d)", n)
	}
}

// TestHasteLinksRedirect: the links haste clients print, a code with an extension, lead to the
// paste's own address, its query kept; anything else with a dot is what it was before.
func TestHasteLinksRedirect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("print('hi')\n", "")
	for _, tt := range []struct{ path, location string }{
		{"/" + p.code + ".py", "/" + p.code},
		{"/raw/" + p.code + ".py", "/raw/" + p.code},
		{"/raw/" + p.code + ".tar.gz?download", "/raw/" + p.code + "?download"},
	} {
		r := e.send(e.request(http.MethodGet, tt.path, nil))
		if r.StatusCode != http.StatusMovedPermanently || r.Header.Get("Location") != tt.location {
			t.Errorf("GET %s: %d to %q, want 301 to %s", tt.path, r.StatusCode, r.Header.Get("Location"), tt.location)
		}
	}
	for _, path := range []string{"/robots.txt", "/favicon.ico", "/raw/short.txt", "/" + p.code + "x.py"} {
		if r := e.get(path); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, r.StatusCode)
		}
	}
	if r := e.do(e.request(http.MethodPost, "/"+p.code+".py", nil)); r.StatusCode == http.StatusMovedPermanently {
		t.Errorf("POST %s.py was redirected: only GETs are", p.code)
	}
}
