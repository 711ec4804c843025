package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/go-cmp/cmp"

	"pastebin/api/problem"
	"pastebin/paste"
)

// Fuzz targets for the create decoders. They run the decoders as the handlers do (limitBody first)
// but with a small paste limit, so the fuzzer reaches it, and never touch the database.
// scripts/fuzz.sh runs each for a few seconds in make test; make fuzz runs them longer.

// fuzzMax is the paste limit under fuzzing, and fuzzSlack what a body may carry beyond it: both
// small, so that mutated inputs cross them often.
const (
	fuzzMax   = 64
	fuzzSlack = 256
)

// FuzzDecodeJSONCreate feeds POST /api/v1/pastes bodies to the JSON decoder.
func FuzzDecodeJSONCreate(f *testing.F) {
	f.Add("application/json", []byte(`{"content":"hello","expires_in":"1h","title":"t","language":"go"}`))
	f.Add("application/json; charset=utf-8", []byte(`{"content":"x","expires_in":3600,"burn_after_read":true}`))
	f.Add("application/json", []byte(`{"content":""}`))
	f.Add("text/plain", []byte(`{"content":"x"}`))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		decode := func() (paste.Input, error) {
			r := newFuzzRequest("", "Content-Type: "+contentType, body)
			if err := limitBody(httptest.NewRecorder(), r, fuzzMax, 2*fuzzMax+fuzzSlack); err != nil {
				return paste.Input{}, err
			}
			return decodeJSONCreate(r, fuzzMax)
		}
		in, err := decode()
		checkDeterministic(t, in, err, decode)
		if err != nil {
			checkClientError(t, err)
			return
		}
		checkDecoded(t, in)
		if !json.Valid(body) {
			t.Errorf("accepted %q, which is not one JSON value", body)
		}
		if !utf8.Valid(in.Content) { // encoding/json turns bad bytes into U+FFFD; JSON pastes are always text
			t.Errorf("content %q from JSON is not UTF-8", in.Content)
		}
	})
}

// FuzzDecodeCurlCreate feeds POST / and PUT /{name} requests to the curl decoder: a raw or multipart
// body, with options in the query, in headers ("Name: value" lines) and in form fields.
func FuzzDecodeCurlCreate(f *testing.F) {
	f.Add("", "expires_in=1h&burn=1", "", []byte("hello\n"))
	f.Add("notes.txt", "", "Paste-Title: My notes\nPaste-Expires-In: 10m", []byte("some text"))
	f.Add("", "title=q&expires_in=1d", "Paste-Title: h\nPaste-Expires-In: 1w", []byte("query wins"))
	f.Add("", "", "Content-Type: multipart/form-data; boundary=XyZ",
		[]byte("--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.go\"\r\n\r\npackage a\r\n"+
			"--XyZ\r\nContent-Disposition: form-data; name=\"expires_in\"\r\n\r\n1h\r\n--XyZ--\r\n"))
	f.Fuzz(func(t *testing.T, name, rawQuery, headers string, body []byte) {
		decode := func() (paste.Input, error) {
			r := newFuzzRequest(rawQuery, headers, body)
			rctx := chi.NewRouteContext()
			rctx.URLParams.Add("name", name)
			r = r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, rctx))
			if err := limitBody(httptest.NewRecorder(), r, fuzzMax, fuzzMax+fuzzSlack); err != nil {
				return paste.Input{}, err
			}
			return decodeCurlCreate(r, fuzzMax)
		}
		in, err := decode()
		checkDeterministic(t, in, err, decode)
		if err != nil {
			checkClientError(t, err)
			return
		}
		checkDecoded(t, in)
		r := newFuzzRequest(rawQuery, headers, nil)
		if mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mediaType == "multipart/form-data" {
			return // FuzzCreateFields checks what forms decode to
		}
		if !bytes.Equal(in.Content, body) {
			t.Errorf("stored %q from the raw body %q: want it byte for byte", in.Content, body)
		}
		want := r.Header.Get("Paste-Expires-In") // documented: a query parameter wins over its header
		if q := r.URL.Query(); q.Has("expires_in") {
			want = q.Get("expires_in")
		}
		if in.ExpiresIn != want {
			t.Errorf("expires_in %q, want %q (query %q, headers %q)", in.ExpiresIn, want, rawQuery, headers)
		}
	})
}

// FuzzCreateFields sends the same fuzzed create as curl -F does and as JSON, and checks that each
// decoder reads back what was sent, and refuses only what validation refuses.
func FuzzCreateFields(f *testing.F) {
	f.Add([]byte("package main\n"), "main.go", "A title", "Go", "", "1h", "true", true)
	f.Add([]byte("text\r\nwith CRLF"), "", "  spaced  ", "", "notes.txt", "", "no", false)
	f.Add([]byte("x"), "dir/sub/file.txt", "", "", "", "never", "", true)
	f.Fuzz(func(t *testing.T, content []byte, fileName, title, language, filename, expiresIn, burn string, asFile bool) {
		fields := []string{title, language, filename, expiresIn, burn}
		checkFormFields(t, content, fileName, fields, asFile)
		checkJSONFields(t, content, fields)
	})
}

func checkFormFields(t *testing.T, content []byte, fileName string, fields []string, asFile bool) {
	t.Helper()
	const boundary = "fuzz-form-boundary"
	if strings.ContainsAny(fileName, "\r\n") || bytes.Contains(content, []byte(boundary)) ||
		strings.Contains(strings.Join(fields, ""), boundary) {
		return // not a form multipart.Writer writes faithfully
	}
	body, want := encodeForm(t, boundary, content, fileName, fields, asFile)
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
	if err := limitBody(httptest.NewRecorder(), r, fuzzMax, fuzzMax+multipartOverhead); err != nil {
		return // a form past the body bound: FuzzDecodeCurlCreate's business
	}
	got, err := decodeCurlCreate(r, fuzzMax)
	if err != nil {
		checkClientError(t, err)
		_, burnErr := parseBool(fields[4])
		short := !slices.ContainsFunc(fields, func(v string) bool { return len(v) > maxFieldBytes })
		if wellFormed(want) && burnErr == nil && short && isPrintableASCII(fileName) {
			t.Errorf("a well-formed form was refused: %v", err)
		}
		return
	}
	checkDecoded(t, got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded form differs from the one sent (-sent +decoded):\n%s", diff)
	}
}

// encodeForm writes the form with the option fields that are set, and returns it with the input the
// decoder should make of it.
func encodeForm(t *testing.T, boundary string, content []byte, fileName string, fields []string, asFile bool) ([]byte, paste.Input) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.SetBoundary(boundary); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"title", "language", "filename", "expires_in", "burn"} {
		if fields[i] != "" {
			_ = w.WriteField(name, fields[i])
		}
	}
	want := sentInput(content, fields)
	if asFile {
		pw, _ := w.CreateFormFile("file", fileName)
		_, _ = pw.Write(content)
		if fields[2] == "" && fileName != "" { // the file names the paste unless a filename field does
			want.Filename = strings.TrimSpace(filepath.Base(fileName))
		}
	} else {
		_ = w.WriteField("content", string(content))
	}
	_ = w.Close()
	return b.Bytes(), want
}

// checkJSONFields sends the fields as a JSON create, and compares what comes back.
func checkJSONFields(t *testing.T, content []byte, fields []string) {
	t.Helper()
	if !utf8.Valid(content) || slices.ContainsFunc(fields, func(v string) bool { return !utf8.ValidString(v) }) {
		return // JSON strings are text: json.Marshal would change these bytes
	}
	want := sentInput(content, fields)
	body := map[string]any{"content": string(content), "burn_after_read": want.Burn}
	for i, name := range []string{"title", "language", "filename", "expires_in"} {
		if fields[i] != "" {
			body[name] = fields[i]
		}
	}
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	r := newFuzzRequest("", "Content-Type: application/json", data)
	if err := limitBody(httptest.NewRecorder(), r, fuzzMax, 2*fuzzMax+multipartOverhead); err != nil {
		t.Fatal(err)
	}
	got, err := decodeJSONCreate(r, fuzzMax)
	if err != nil {
		checkClientError(t, err)
		if wellFormed(want) {
			t.Errorf("a well-formed JSON create was refused: %v\n%s", err, data)
		}
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded JSON differs from the one sent (-sent +decoded):\n%s", diff)
	}
}

// sentInput is what a create with these content and option fields (title, language, filename,
// expires_in, burn) means, tidied as paste.Input.Tidy documents.
func sentInput(content []byte, fields []string) paste.Input {
	sum := sha256.Sum256(content)
	in := paste.Input{
		Content: content, Hash: sum[:], Title: strings.TrimSpace(fields[0]),
		Language: strings.ToLower(strings.TrimSpace(fields[1])), Filename: strings.TrimSpace(fields[2]), ExpiresIn: fields[3],
	}
	in.Burn, _ = parseBool(fields[4])
	if in.Burn {
		in.MaxViews = 1 // burn after reading is a view limit of one
	}
	return in
}

// wellFormed reports whether in is a create the decoders must accept.
func wellFormed(in paste.Input) bool {
	return in.Tidy() == nil && len(in.Content) > 0 && len(in.Content) <= fuzzMax
}

// FuzzDecodeWebForm feeds the browser's create form, multipart or urlencoded, to its decoder.
func FuzzDecodeWebForm(f *testing.F) {
	f.Add("Content-Type: application/x-www-form-urlencoded", []byte("content=hello%0D%0Aworld&expires_in=1h&title=t"))
	f.Add("Content-Type: multipart/form-data; boundary=B",
		[]byte("--B\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\ntyped\r\n"+
			"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\"\r\n\r\n\r\n--B--\r\n"))
	f.Fuzz(func(t *testing.T, headers string, body []byte) {
		decode := func() (paste.Input, error) {
			r := newFuzzRequest("", headers, body)
			if err := limitBody(httptest.NewRecorder(), r, fuzzMax, fuzzMax+fuzzSlack); err != nil {
				return paste.Input{}, err
			}
			return decodeWebForm(r, fuzzMax)
		}
		in, err := decode()
		checkDeterministic(t, in, err, decode)
		if err != nil {
			checkClientError(t, err)
			return
		}
		checkDecoded(t, in)
	})
}

// newFuzzRequest builds a create request from a raw query, "Name: value" header lines and a body.
// The query is set raw, as a client may send anything there. The body comes without a length, as a
// chunked upload does, so limits are met while reading, which is the harder case.
func newFuzzRequest(rawQuery, headers string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.ContentLength = -1
	r.URL.RawQuery = rawQuery
	for _, line := range strings.Split(headers, "\n") {
		if name, value, ok := strings.Cut(line, ":"); ok {
			r.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		}
	}
	return r
}

// checkClientError fails unless err is a problem the client can act on. Bad input must never look
// like a fault of the server (a 500 and an error log), and a 413 must name the paste limit, not
// the slack that limitBody allows the whole body.
func checkClientError(t *testing.T, err error) {
	t.Helper()
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) && tooBig.Limit != fuzzMax {
		t.Errorf("413 names a limit of %d bytes, want the paste limit %d", tooBig.Limit, fuzzMax)
	}
	p := problem.From(httptest.NewRequest(http.MethodPost, "/", nil), slog.New(slog.DiscardHandler), err)
	if p.Status < 400 || p.Status > 499 || p.Detail == "" {
		t.Errorf("bad input answered %d %s %q (from %v), want a 4xx problem with a detail", p.Status, p.Name, p.Detail, err)
	}
}

// checkDecoded checks what every accepted create holds, whichever way it came in.
func checkDecoded(t *testing.T, in paste.Input) {
	t.Helper()
	if len(in.Content) == 0 || len(in.Content) > fuzzMax {
		t.Errorf("accepted %d bytes of content, want 1 to %d", len(in.Content), fuzzMax)
	}
	if sum := sha256.Sum256(in.Content); !bytes.Equal(in.Hash, sum[:]) {
		t.Errorf("hash %x is not the SHA-256 of the content, %x", in.Hash, sum)
	}
	// Accepted options are already tidy: validating them again changes nothing.
	again := in
	if err := again.Tidy(); err != nil {
		t.Errorf("accepted options that do not validate: %v", err)
	}
	if again.Title != in.Title || again.Language != in.Language || again.Filename != in.Filename {
		t.Errorf("options %q %q %q are not tidy: %q %q %q", in.Title, in.Language, in.Filename, again.Title, again.Language, again.Filename)
	}
}

// checkDeterministic decodes the same request again, a few times: the answer must not depend on
// map order or on anything else outside the request.
func checkDeterministic(t *testing.T, in paste.Input, err error, decode func() (paste.Input, error)) {
	t.Helper()
	for range 3 {
		in2, err2 := decode()
		if diff := cmp.Diff(in, in2); diff != "" || fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Fatalf("the same request decoded differently: %v then %v\n%s", err, err2, diff)
		}
	}
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
