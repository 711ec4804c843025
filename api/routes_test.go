package api_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCreateCurlForms(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	multipartBody := func(fields map[string]string, file string) (*bytes.Buffer, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for k, v := range fields {
			_ = mw.WriteField(k, v)
		}
		if file != "" {
			fw, _ := mw.CreateFormFile("file", "notes.md")
			_, _ = fw.Write([]byte(file))
		}
		_ = mw.Close()
		return &buf, mw.FormDataContentType()
	}
	mp, mpType := multipartBody(map[string]string{"expires_in": "1h", "title": "Notes"}, "# notes\n")
	mpText, mpTextType := multipartBody(map[string]string{"content": "from a form field"}, "")
	var mpEmptyFile bytes.Buffer // curl -F file=@empty.txt -F content=...: the empty file does not win
	emw := multipart.NewWriter(&mpEmptyFile)
	_, _ = emw.CreateFormFile("file", "empty.txt")
	_ = emw.WriteField("content", "the field, not the empty file")
	_ = emw.Close()
	mpEmptyFileType := emw.FormDataContentType()
	tests := []struct {
		name     string
		req      *http.Request
		content  string
		filename string
		title    string
	}{
		{"raw body", e.request(http.MethodPost, "/", strings.NewReader("raw text\n")), "raw text\n", "", ""},
		{"urlencoded body from curl -d is still raw", e.request(http.MethodPost, "/?title=hi", strings.NewReader("a=b&c"),
			"Content-Type", "application/x-www-form-urlencoded"), "a=b&c", "", "hi"},
		{"multipart file", e.request(http.MethodPost, "/", mp, "Content-Type", mpType), "# notes\n", "notes.md", "Notes"},
		{"multipart content field", e.request(http.MethodPost, "/", mpText, "Content-Type", mpTextType), "from a form field", "", ""},
		{"empty file beside a content field", e.request(http.MethodPost, "/", &mpEmptyFile, "Content-Type", mpEmptyFileType), "the field, not the empty file", "", ""},
		{"PUT keeps the file name", e.request(http.MethodPut, "/main.go", strings.NewReader("package main\n")), "package main\n", "main.go", ""},
		// Escapes that are not Go's own (lower-case hex) name the same file as Go's.
		{"PUT unescapes the file name", e.request(http.MethodPut, "/caf%c3%a9.txt", strings.NewReader("crème")), "crème", "café.txt", ""},
		{"options as headers", e.request(http.MethodPost, "/", strings.NewReader("hdr"), "Paste-Title", "From headers",
			"Paste-Expires-In", "10m"), "hdr", "", "From headers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(tt.req)
			if r.StatusCode != http.StatusCreated {
				t.Fatalf("got %d, want 201: %s", r.StatusCode, r.body)
			}
			lines := strings.Split(strings.TrimSpace(r.text()), "\n")
			if len(lines) != 2 || r.Header.Get("Location") != lines[0] || r.Header.Get("Paste-Delete-Token") != lines[1] {
				t.Fatalf("answer %q with Location %q and token header %q: want URL and token lines matching the headers",
					r.text(), r.Header.Get("Location"), r.Header.Get("Paste-Delete-Token"))
			}
			code := lines[0][strings.LastIndex(lines[0], "/")+1:]
			if got := e.get("/raw/" + code).text(); got != tt.content {
				t.Errorf("raw read: got %q, want %q", got, tt.content)
			}
			var meta map[string]any
			_ = json.Unmarshal(e.get("/api/v1/pastes/"+code).body, &meta)
			if meta["filename"] != tt.filename || meta["title"] != tt.title {
				t.Errorf("metadata filename %q title %q, want %q and %q", meta["filename"], meta["title"], tt.filename, tt.title)
			}
		})
	}
}

func TestCreateJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(e.request(http.MethodPost, "/api/v1/pastes",
		strings.NewReader(`{"content":"fmt.Println(1)","expires_in":"1h","title":"demo","language":"go"}`),
		"Content-Type", "application/json"))
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("got %d: %s", r.StatusCode, r.body)
	}
	var got struct {
		Code        string    `json:"code"`
		URL         string    `json:"url"`
		RawURL      string    `json:"raw_url"`
		DeleteToken string    `json:"delete_token"`
		Title       string    `json:"title"`
		Language    string    `json:"language"`
		Size        int       `json:"size"`
		ExpiresAt   time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if r.Header.Get("Location") != got.URL || got.URL != e.srv.URL+"/"+got.Code || got.RawURL != e.srv.URL+"/raw/"+got.Code {
		t.Errorf("urls: Location %q, url %q, raw_url %q", r.Header.Get("Location"), got.URL, got.RawURL)
	}
	if got.Size != 14 || got.Title != "demo" || got.Language != "go" || len(got.DeleteToken) != 43 {
		t.Errorf("got size %d title %q language %q token %q", got.Size, got.Title, got.Language, got.DeleteToken)
	}
	if d := time.Until(got.ExpiresAt); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("expires_at %v is not an hour from now", got.ExpiresAt)
	}
	// curl can ask for the same JSON.
	r = e.do(e.request(http.MethodPost, "/", strings.NewReader("x"), "Accept", "application/json"))
	if r.StatusCode != http.StatusCreated || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("POST / with Accept: application/json: %d %s", r.StatusCode, r.Header.Get("Content-Type"))
	}
}

func TestReadRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("<script>alert(1)</script>\n", "?filename=x.html")
	for _, path := range []string{"/raw/" + p.code, "/" + p.code} {
		r := e.get(path)
		if r.StatusCode != http.StatusOK || r.text() != "<script>alert(1)</script>\n" {
			t.Fatalf("GET %s: %d %q", path, r.StatusCode, r.body)
		}
		want := map[string]string{
			"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff",
			"Content-Security-Policy": "default-src 'none'; sandbox",
		}
		for h, v := range want {
			if r.Header.Get(h) != v {
				t.Errorf("GET %s: %s is %q, want %q", path, h, r.Header.Get(h), v)
			}
		}
		if r.Header.Get("ETag") == "" || r.Header.Get("Paste-Expires-At") == "" {
			t.Errorf("GET %s: no ETag or Paste-Expires-At", path)
		}
	}
	etag := e.get("/raw/" + p.code).Header.Get("ETag")
	if r := e.get("/raw/"+p.code, "If-None-Match", etag); r.StatusCode != http.StatusNotModified || len(r.body) != 0 {
		t.Errorf("If-None-Match: got %d with %d bytes, want 304 and none", r.StatusCode, len(r.body))
	}
	if r := e.get("/raw/"+p.code, "If-None-Match", `"other"`); r.StatusCode != http.StatusOK {
		t.Errorf("If-None-Match with another tag: got %d, want 200", r.StatusCode)
	}
	head := e.do(e.request(http.MethodHead, "/raw/"+p.code, nil))
	if head.StatusCode != http.StatusOK || head.Header.Get("Content-Length") != "26" || head.Header.Get("ETag") != etag {
		t.Errorf("HEAD: %d, length %q, etag %q", head.StatusCode, head.Header.Get("Content-Length"), head.Header.Get("ETag"))
	}
	dl := e.get("/raw/" + p.code + "?download")
	if got := dl.Header.Get("Content-Disposition"); got != `attachment; filename=x.html` {
		t.Errorf("download: Content-Disposition %q", got)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMaxSize(1000))
	p := e.create("mine", "")
	before := e.count(`SELECT count(*) FROM pastes`)
	bigJSON, _ := json.Marshal(map[string]string{"content": strings.Repeat("x", 1001)})
	var emptyFile bytes.Buffer
	mw := multipart.NewWriter(&emptyFile)
	_, _ = mw.CreateFormFile("file", "empty.txt")
	_ = mw.Close()
	tests := []struct {
		name   string
		req    *http.Request
		status int
		typ    string
	}{
		{"oversized raw body", e.request(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", 1001))), 413, "too-large"},
		{"oversized JSON content", e.request(http.MethodPost, "/api/v1/pastes", bytes.NewReader(bigJSON), "Content-Type", "application/json"), 413, "too-large"},
		{"empty raw body", e.request(http.MethodPost, "/", strings.NewReader("")), 400, "empty-content"},
		{"empty JSON content", e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content":""}`), "Content-Type", "application/json"), 400, "empty-content"},
		{"empty multipart file", e.request(http.MethodPost, "/", &emptyFile, "Content-Type", mw.FormDataContentType()), 400, "empty-content"},
		{"bad expires_in", e.request(http.MethodPost, "/?expires_in=soon", strings.NewReader("x")), 400, "invalid-expiry"},
		{"expires_in past the maximum", e.request(http.MethodPost, "/?expires_in=31d", strings.NewReader("x")), 400, "invalid-expiry"},
		{"never when not allowed", e.request(http.MethodPost, "/?expires_in=never", strings.NewReader("x")), 400, "invalid-expiry"},
		{"negative seconds in JSON", e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content":"x","expires_in":-5}`), "Content-Type", "application/json"), 400, "invalid-expiry"},
		{"malformed JSON", e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content":`), "Content-Type", "application/json"), 400, "malformed-request"},
		{"unknown JSON field", e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content":"x","expire":"1h"}`), "Content-Type", "application/json"), 400, "malformed-request"},
		{"wrong content type", e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`content=x`), "Content-Type", "text/plain"), 415, "unsupported-media-type"},
		{"bad burn flag", e.request(http.MethodPost, "/?burn=maybe", strings.NewReader("x")), 400, "malformed-request"},
		{"title with control characters", e.request(http.MethodPost, "/?title=a%00b", strings.NewReader("x")), 400, "malformed-request"},
		{"filename that names a folder", e.request(http.MethodPost, "/?filename=..", strings.NewReader("x")), 400, "malformed-request"},
		{"short idempotency key", e.request(http.MethodPost, "/", strings.NewReader("x"), "Idempotency-Key", "1"), 400, "invalid-idempotency-key"},
		{"unknown code", e.request(http.MethodGet, "/raw/AAAAAAAAAAA", nil), 404, "not-found"},
		{"malformed code", e.request(http.MethodGet, "/raw/nope", nil), 404, "not-found"},
		{"unknown code metadata", e.request(http.MethodGet, "/api/v1/pastes/AAAAAAAAAAA", nil), 404, "not-found"},
		{"delete without token", e.request(http.MethodDelete, "/api/v1/pastes/"+p.code, nil), 401, "unauthorized"},
		{"delete with a malformed token", e.request(http.MethodDelete, "/api/v1/pastes/"+p.code, nil, "Authorization", "Bearer abc"), 401, "unauthorized"},
		{"delete with the wrong token", e.request(http.MethodDelete, "/api/v1/pastes/"+p.code, nil, "Authorization", "Bearer "+strings.Repeat("A", 43)), 403, "forbidden"},
		{"delete an unknown code", e.request(http.MethodDelete, "/api/v1/pastes/AAAAAAAAAAA", nil, "Authorization", "Bearer "+p.token), 404, "not-found"},
		{"unknown route", e.request(http.MethodGet, "/no/such/route", nil), 404, "route-not-found"},
		{"wrong method", e.request(http.MethodPatch, "/api/v1/pastes/"+p.code, nil), 405, "method-not-allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(tt.req)
			if r.StatusCode != tt.status {
				t.Fatalf("got %d, want %d: %s", r.StatusCode, tt.status, r.body)
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q, want application/problem+json", ct)
			}
			var prob struct{ Type, Title, Detail string }
			if err := json.Unmarshal(r.body, &prob); err != nil || prob.Type != "/problems/"+tt.typ || prob.Title == "" {
				t.Errorf("problem %+v (%v), want type /problems/%s", prob, err, tt.typ)
			}
		})
	}
	// Nothing was written by any of them: no paste, no content, no object beyond the first paste's.
	if after := e.count(`SELECT count(*) FROM pastes`); after != before {
		t.Errorf("pastes: %d before, %d after the bad requests", before, after)
	}
	if n := e.count(`SELECT count(*) FROM content`); n != 1 {
		t.Errorf("content rows: %d, want 1", n)
	}
	if r := e.get("/raw/" + p.code); r.text() != "mine" {
		t.Errorf("the first paste reads %q after the bad requests", r.body)
	}
}

func TestOperationsRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create("counted", "")
	if r := e.get("/healthz"); r.StatusCode != 200 {
		t.Errorf("healthz: %d", r.StatusCode)
	}
	var ready struct {
		Status string
		Checks map[string]string
	}
	r := e.get("/readyz")
	_ = json.Unmarshal(r.body, &ready)
	want := map[string]string{"postgres": "ok", "redis": "ok", "s3": "ok"}
	if r.StatusCode != 200 || ready.Status != "ok" || !cmp.Equal(ready.Checks, want) {
		t.Errorf("readyz: %d %s", r.StatusCode, r.body)
	}
	m := e.get("/metrics")
	if !strings.Contains(m.text(), `pastebin_http_requests_total{method="POST",route="/",status="201"} 1`) {
		t.Errorf("metrics lack the create, by route pattern:\n%s", grep(m.text(), "pastebin_http_requests_total"))
	}
	if !strings.Contains(m.text(), `route="/healthz"`) || strings.Contains(m.text(), `route="/raw/`) {
		t.Errorf("metrics labels are not route patterns")
	}
	if r := e.get("/openapi.yaml"); r.StatusCode != 200 || !strings.HasPrefix(r.text(), "openapi:") {
		t.Errorf("openapi.yaml: %d %.40q", r.StatusCode, r.body)
	}
	if r := e.get("/problems/gone"); r.StatusCode != 200 || !strings.Contains(r.text(), `"status":410`) {
		t.Errorf("problems/gone: %d %s", r.StatusCode, r.body)
	}
	if r := e.get("/", "Accept", "*/*"); r.StatusCode != 200 || !strings.Contains(r.text(), "curl") {
		t.Errorf("usage: %d %s", r.StatusCode, r.body)
	}
}

func grep(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
