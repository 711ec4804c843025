package api_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"pastebin/envelope"
)

// seal encrypts text as the command line does.
func seal(t *testing.T, p envelope.Paste, password string) ([]byte, envelope.Format, []byte) {
	t.Helper()
	body, f, key, err := envelope.Seal(p, password)
	if err != nil {
		t.Fatal(err)
	}
	return body, f, key
}

// createEncrypted posts body as an encrypted paste, options in query, and returns its code.
func (e *env) createEncrypted(body []byte, format, query string) string {
	e.t.Helper()
	r := e.do(e.request(http.MethodPost, "/"+query, bytes.NewReader(body),
		"Content-Type", "application/octet-stream", "Paste-Encryption", format))
	if r.StatusCode != http.StatusCreated {
		e.t.Fatalf("encrypted create: %d %s", r.StatusCode, r.body)
	}
	line := strings.SplitN(r.text(), "\n", 2)[0]
	return line[strings.LastIndex(line, "/")+1:]
}

// TestEncryptedPasteRoundTrip: the ciphertext is stored and answered as it came, with its format
// (canonical, from a loosely written one) in the metadata and the Paste-Encryption header, from
// the database and from the cache alike, and it opens with the key the server never saw. The page
// holds none of it, only what its script needs.
func TestEncryptedPasteRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := envelope.Paste{Title: "Secret plans", Filename: "plans.txt", Text: []byte("attack at dawn\n")}
	body, _, key := seal(t, want, "")
	code := e.createEncrypted(body, "v1;kdf=none", "?expires_in=1h")

	m := e.meta(code)
	if m["encryption"] != "v1; kdf=none" || m["title"] != "" || m["filename"] != "" || m["max_views"] != nil {
		t.Errorf("metadata: %v", m)
	}
	for range 2 { // the second from the cache
		for _, path := range []string{"/raw/" + code, "/" + code} {
			r := e.get(path)
			if r.StatusCode != http.StatusOK || !bytes.Equal(r.body, body) || r.Header.Get("Paste-Encryption") != "v1; kdf=none" ||
				r.Header.Get("Content-Type") != "application/octet-stream" {
				t.Fatalf("GET %s: %d, %s, Paste-Encryption %q, same bytes %v", path, r.StatusCode,
					r.Header.Get("Content-Type"), r.Header.Get("Paste-Encryption"), bytes.Equal(r.body, body))
			}
			f, err := envelope.ParseFormat(r.Header.Get("Paste-Encryption"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := envelope.Open(r.body, f, key, "")
			if err != nil || got.Title != want.Title || string(got.Text) != string(want.Text) {
				t.Errorf("opened: %+v, %v", got, err)
			}
		}
	}
	if r := e.do(e.request(http.MethodHead, "/raw/"+code, nil)); r.Header.Get("Paste-Encryption") != "v1; kdf=none" {
		t.Errorf("HEAD: Paste-Encryption %q", r.Header.Get("Paste-Encryption"))
	}
	page := e.get("/"+code, "Accept", "text/html")
	for _, want := range []string{`data-encryption="v1; kdf=none"`, `id="e2e"`, "/e2e.js", "Turn on JavaScript"} {
		if !strings.Contains(page.text(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page.text(), `id="raw"`) {
		t.Error("the page of an encrypted paste links its raw ciphertext as if it were text")
	}
}

// TestEncryptedPasteWithViewLimit: a POST takes a view and answers the ciphertext with its format;
// the page's button takes nothing from an encrypted paste (its page's script takes the view).
func TestEncryptedPasteWithViewLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body, f, key := seal(t, envelope.Paste{Text: []byte("twice")}, "pw")
	code := e.createEncrypted(body, f.String(), "?max_views=2")
	button := url.Values{"as": {"page"}}.Encode()
	r := e.do(e.request(http.MethodPost, "/"+code, strings.NewReader(button),
		"Content-Type", "application/x-www-form-urlencoded", "Accept", "text/html"))
	if r.Request.Method != http.MethodGet || r.Request.URL.Path != "/"+code { // the client followed the 303
		t.Errorf("the page's button on an encrypted paste: %d at %s %s, want 303 to the page", r.StatusCode, r.Request.Method, r.Request.URL.Path)
	}
	if m := e.meta(code); m["views_left"] != 2.0 {
		t.Errorf("views left after the button: %v, want 2", m["views_left"])
	}
	r = e.do(e.request(http.MethodPost, "/raw/"+code, nil))
	if r.StatusCode != http.StatusOK || r.Header.Get("Paste-Encryption") != f.String() || r.Header.Get("Paste-Views-Left") != "1" {
		t.Fatalf("POST: %d, Paste-Encryption %q, Paste-Views-Left %q", r.StatusCode, r.Header.Get("Paste-Encryption"), r.Header.Get("Paste-Views-Left"))
	}
	if got, err := envelope.Open(r.body, f, key, "pw"); err != nil || string(got.Text) != "twice" {
		t.Errorf("opened: %q, %v", got.Text, err)
	}
}

// TestEncryptedCreateRefusals: the server checks the format's shape and the body's size, never
// more, and keeps no title, file name or language in clear beside the ciphertext: an explicit one
// is refused, the name of an upload (a file part, PUT's path) is not kept.
func TestEncryptedCreateRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body, f, _ := seal(t, envelope.Paste{Text: []byte("x")}, "")
	format := f.String()
	for name, req := range map[string]*http.Request{
		"title":         e.request(http.MethodPost, "/?title=clear", bytes.NewReader(body), "Paste-Encryption", format),
		"title header":  e.request(http.MethodPost, "/", bytes.NewReader(body), "Paste-Encryption", format, "Paste-Title", "clear"),
		"filename":      e.request(http.MethodPost, "/?filename=a.txt", bytes.NewReader(body), "Paste-Encryption", format),
		"language":      e.request(http.MethodPost, "/?language=go", bytes.NewReader(body), "Paste-Encryption", format),
		"unknown kdf":   e.request(http.MethodPost, "/", bytes.NewReader(body), "Paste-Encryption", "v1; kdf=scrypt"),
		"few iter":      e.request(http.MethodPost, "/", bytes.NewReader(body), "Paste-Encryption", "v1; kdf=pbkdf2-sha256; iter=1000"),
		"version 2":     e.request(http.MethodPost, "/", bytes.NewReader(body), "Paste-Encryption", "v2; kdf=none"),
		"short body":    e.request(http.MethodPost, "/", bytes.NewReader(body[:20]), "Paste-Encryption", format),
		"plain text":    e.request(http.MethodPost, "/", strings.NewReader(strings.Repeat("plain text, not sealed ", 4)), "Paste-Encryption", format),
		"salt missing":  e.request(http.MethodPost, "/", bytes.NewReader(body[:33]), "Paste-Encryption", "v1; kdf=pbkdf2-sha256; iter=600000"),
		"json":          e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(`{"content": "x", "encryption": "v1; kdf=none"}`), "Content-Type", "application/json"),
		"form title":    multipartCreate(e, body, map[string]string{"encryption": format, "title": "clear"}),
		"huge format":   e.request(http.MethodPost, "/?encryption="+url.QueryEscape("v1; kdf=none"+strings.Repeat(" ", 100)), bytes.NewReader(body)),
		"two kdfs":      e.request(http.MethodPost, "/", bytes.NewReader(body), "Paste-Encryption", "v1; kdf=none; kdf=none"),
		"empty param":   e.request(http.MethodPost, "/", bytes.NewReader(body), "Paste-Encryption", "v1; kdf="),
		"burn and more": e.request(http.MethodPost, "/?burn=true&max_views=3", bytes.NewReader(body), "Paste-Encryption", format),
	} {
		if r := e.do(req); r.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, r.StatusCode, r.body)
		}
	}
	if n := e.count(`SELECT count(*) FROM pastes`); n != 0 {
		t.Errorf("%d pastes stored by refused creates", n)
	}
	r := e.do(multipartCreate(e, body, map[string]string{"encryption": format}))
	put := e.do(e.request(http.MethodPut, "/original-name.txt", bytes.NewReader(body), "Paste-Encryption", format))
	if r.StatusCode != http.StatusCreated || put.StatusCode != http.StatusCreated {
		t.Fatalf("a file part, a PUT: %d %s, %d %s", r.StatusCode, r.body, put.StatusCode, put.body)
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE encryption IS NOT NULL AND filename = ''`); n != 2 {
		t.Errorf("%d encrypted pastes without a file name, want 2: the upload's name is not kept", n)
	}
}

// multipartCreate is curl -F file=@secret.txt with fields.
func multipartCreate(e *env, file []byte, fields map[string]string) *http.Request {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	part, _ := w.CreateFormFile("file", "secret.txt")
	_, _ = part.Write(file)
	_ = w.Close()
	return e.request(http.MethodPost, "/", &buf, "Content-Type", w.FormDataContentType())
}
