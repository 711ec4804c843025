package api_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// Tests of the browser's create form: POST / from a page, answered with a redirect to the new
// paste's page and its delete token in a cookie for that page.

// webForm is the create form's multipart body, as a browser sends it: an empty file part when no
// file was chosen.
func webForm(t testing.TB, fields map[string]string, fileName, file string) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("file", fileName)
	_, _ = fw.Write([]byte(file))
	_ = mw.Close()
	return &buf, mw.FormDataContentType()
}

// postForm posts the create form as a browser and returns the 303 answer.
func (e *env) postForm(fields map[string]string, fileName, file string) response {
	e.t.Helper()
	body, ctype := webForm(e.t, fields, fileName, file)
	return e.send(e.request(http.MethodPost, "/", body, "Content-Type", ctype, "Accept", browserAccept))
}

// codeOf is the short code a 303 after a create points at.
func codeOf(t *testing.T, r response) string {
	t.Helper()
	loc := r.Header.Get("Location")
	if r.StatusCode != http.StatusSeeOther || !regexp.MustCompile(`^/[0-9A-Za-z]{11}$`).MatchString(loc) {
		t.Fatalf("got %d with Location %q, want 303 to /<code>: %s", r.StatusCode, loc, r.body)
	}
	return loc[1:]
}

func TestWebCreateShowsTokenOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.postForm(map[string]string{
		"content": "package main\r\n\r\nfunc main() {}\r\n", "title": "Demo", "language": "go", "expires_in": "1h",
	}, "", "")
	code := codeOf(t, r)
	cookie := r.Header.Get("Set-Cookie")
	token := regexp.MustCompile(`^paste_token=([A-Za-z0-9_-]{43});`).FindStringSubmatch(cookie)
	if token == nil {
		t.Fatalf("Set-Cookie %q carries no token", cookie)
	}
	for _, attr := range []string{"Path=/" + code, "Max-Age=300", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(cookie, "; "+attr) {
			t.Errorf("Set-Cookie %q lacks %s", cookie, attr)
		}
	}
	if raw := e.get("/raw/" + code).text(); raw != "package main\n\nfunc main() {}\n" {
		t.Errorf("raw content %q: the text area's CRLF line breaks should be LF", raw)
	}

	first := e.page("/"+code, "Cookie", "paste_token="+token[1])
	checkPageHeaders(t, first, "no-store")
	for _, want := range []string{token[1], "shown only now", "<h1 id=\"paste-title\">Demo</h1>", `<span class="kd">func</span>`, `id="L3"`, "expires <time"} {
		if !strings.Contains(first.text(), want) {
			t.Errorf("the first page view lacks %q", want)
		}
	}
	if got := first.Header.Get("Set-Cookie"); !strings.HasPrefix(got, "paste_token=;") || !strings.Contains(got, "Max-Age=0") {
		t.Errorf("the first view should clear the cookie; Set-Cookie %q", got)
	}
	if again := e.page("/" + code); strings.Contains(again.text(), token[1]) || strings.Contains(again.text(), "shown only now") {
		t.Errorf("the token is shown again after the first view")
	}
	if e.delete(code, token[1]).StatusCode != http.StatusNoContent {
		t.Errorf("the token from the cookie does not delete the paste")
	}
}

func TestWebCreateVariants(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	t.Run("urlencoded", func(t *testing.T) {
		form := url.Values{"content": {"a=b&c"}, "burn": {"on"}}
		r := e.send(e.request(http.MethodPost, "/", strings.NewReader(form.Encode()),
			"Content-Type", "application/x-www-form-urlencoded", "Accept", browserAccept))
		code := codeOf(t, r)
		var meta struct {
			Burn bool `json:"burn_after_read"`
		}
		_ = json.Unmarshal(e.get("/api/v1/pastes/"+code).body, &meta)
		if !meta.Burn {
			t.Errorf("burn=on was not taken")
		}
	})
	t.Run("file without JavaScript", func(t *testing.T) {
		code := codeOf(t, e.postForm(map[string]string{"content": "", "filename": ""}, "notes.md", "# Notes\r\n"))
		var meta struct{ Filename string }
		_ = json.Unmarshal(e.get("/api/v1/pastes/"+code).body, &meta)
		if raw := e.get("/raw/" + code).text(); raw != "# Notes\r\n" || meta.Filename != "notes.md" {
			t.Errorf("got %q named %q, want the file's bytes as they were, named notes.md", raw, meta.Filename)
		}
	})
	t.Run("curl -F keeps its answer", func(t *testing.T) {
		body, ctype := webForm(t, map[string]string{"title": "from curl"}, "x.txt", "x")
		r := e.send(e.request(http.MethodPost, "/", body, "Content-Type", ctype, "Accept", "*/*"))
		if r.StatusCode != http.StatusCreated || len(strings.Split(strings.TrimSpace(r.text()), "\n")) != 2 {
			t.Errorf("curl -F: %d %q", r.StatusCode, r.body)
		}
	})
}

func TestWebCreateErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMaxSize(1000))
	tests := []struct {
		name   string
		fields map[string]string
		file   string
		status int
		want   []string
	}{
		{"empty", map[string]string{"title": "Kept"}, "", 400, []string{"Write or paste some text", `value="Kept"`, `role="alert"`}},
		{"bad expiry", map[string]string{"content": "kept text", "expires_in": "31d"}, "", 400, []string{"kept text", "longer than the maximum"}},
		{"bad title", map[string]string{"content": "kept <b>", "title": "a\x01b"}, "", 400, []string{"kept &lt;b&gt;", "title must be printable"}},
		{"too large", map[string]string{}, strings.Repeat("x", 1001), 413, []string{"Paste too large", "larger than 1000 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.postForm(tt.fields, "big.txt", tt.file)
			if r.StatusCode != tt.status {
				t.Fatalf("got %d, want %d", r.StatusCode, tt.status)
			}
			checkPageHeaders(t, r, "no-store")
			for _, w := range tt.want {
				if !strings.Contains(r.text(), w) {
					t.Errorf("the page lacks %q", w)
				}
			}
		})
	}
	if n := e.count(`SELECT count(*) FROM pastes`); n != 0 {
		t.Errorf("%d pastes stored by failed forms", n)
	}
}
