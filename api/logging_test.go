package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"pastebin/api"
)

// logBuffer collects log lines written from the server's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logLine is one JSON log line, with the fields the tests look at.
type logLine struct {
	Msg       string `json:"msg"`
	RequestID string `json:"request_id"`
	Route     string `json:"route"`
	Status    int    `json:"status"`
	raw       string
}

func parseLogs(t *testing.T, s string) []logLine {
	t.Helper()
	var lines []logLine
	for _, raw := range strings.Split(strings.TrimSpace(s), "\n") {
		if raw == "" {
			continue
		}
		l := logLine{raw: raw}
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", raw, err)
		}
		lines = append(lines, l)
	}
	return lines
}

// TestLogs runs a paste's whole life through the real server with the logger writing JSON to a
// buffer: every line written while a request is served carries that request's id, each request has
// one access line, and no line holds a delete token, the admin token or a paste's content.
func TestLogs(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	adminToken := "admin-" + rand.Text()
	e := newEnv(t, withLogger(logger), withAdmin(adminToken, 1), withRates(perMinute(100), perMinute(100)))
	secret := func(what string) string { return what + " " + rand.Text() }
	contents := []string{secret("curl paste"), secret("json paste"), secret("form paste"), secret("lost blob")}
	var tokens []string

	// step sends req and checks the log lines written meanwhile; the server handles one request at a time here.
	step := func(req *http.Request, wantStatus int) response {
		t.Helper()
		before := len(logs.String())
		r := e.send(req)
		if r.StatusCode != wantStatus {
			t.Fatalf("%s %s: got %d, want %d: %s", req.Method, req.URL.Path, r.StatusCode, wantStatus, r.body)
		}
		checkRequestLines(t, req, r, parseLogs(t, logs.String()[before:]))
		return r
	}
	curl := step(e.request(http.MethodPost, "/", strings.NewReader(contents[0])), http.StatusCreated)
	code := strings.TrimPrefix(curl.Header.Get("Location"), e.srv.URL+"/")
	tokens = append(tokens, curl.Header.Get("Paste-Delete-Token"))
	jsonBody, _ := json.Marshal(map[string]string{"content": contents[1]})
	created := step(e.request(http.MethodPost, "/api/v1/pastes", bytes.NewReader(jsonBody), "Content-Type", "application/json"), http.StatusCreated)
	tokens = append(tokens, created.Header.Get("Paste-Delete-Token"))
	body, ctype := webForm(t, map[string]string{"content": contents[2]}, "", "")
	form := step(e.request(http.MethodPost, "/", body, "Content-Type", ctype, "Accept", browserAccept), http.StatusSeeOther)
	tokens = append(tokens, regexp.MustCompile(`paste_token=([^;]+)`).FindStringSubmatch(form.Header.Get("Set-Cookie"))[1])

	step(e.request(http.MethodGet, "/raw/"+code, nil), http.StatusOK)
	step(e.request(http.MethodGet, "/"+code, nil, "Accept", browserAccept), http.StatusOK)
	step(e.request(http.MethodGet, "/api/v1/pastes/"+code, nil), http.StatusOK)
	step(e.request(http.MethodDelete, "/api/v1/pastes/"+code, nil, "Authorization", "Bearer "+strings.Repeat("A", 43)), http.StatusForbidden)
	step(e.request(http.MethodDelete, "/api/v1/pastes/"+code, nil, "Authorization", "Bearer "+tokens[0]), http.StatusNoContent)
	step(e.request(http.MethodGet, "/raw/"+code, nil), http.StatusGone)
	step(e.request(http.MethodPost, "/admin/cleanup", nil, "Authorization", "Bearer "+adminToken), http.StatusAccepted)
	step(e.request(http.MethodPost, "/admin/cleanup", nil, "Authorization", "Bearer wrong-"+adminToken), http.StatusUnauthorized)

	// A failure inside a handler is logged there, with the request's id: a live paste whose blob is gone.
	// (openapi.yaml documents no 500, so this answer is not checked against it.)
	lost := e.create(contents[3], "")
	e.removeBlob(contents[3])
	before := len(logs.String())
	e.noCheck = true
	req := e.request(http.MethodGet, "/raw/"+lost.code, nil)
	r := e.do(req)
	e.noCheck = false
	lines := parseLogs(t, logs.String()[before:])
	checkRequestLines(t, req, r, lines)
	if r.StatusCode != http.StatusInternalServerError || len(lines) != 2 || lines[0].Msg != "internal error" {
		t.Errorf("lost blob: got %d and %v, want 500 and the error logged before the access line", r.StatusCode, lines)
	}

	all := logs.String()
	for _, s := range append(append(tokens, adminToken, lost.token), contents...) {
		if s == "" || strings.Contains(all, s) {
			t.Errorf("logs hold a secret (%q) or it was never captured:\n%s", s, all)
		}
	}
	for _, l := range parseLogs(t, all) {
		if l.Msg == "request" && (strings.Contains(l.raw, code) || strings.Contains(l.raw, lost.code)) {
			t.Errorf("access line names a paste, not its route: %s", l.raw)
		}
	}
}

// checkRequestLines checks the lines logged while one request was served.
func checkRequestLines(t *testing.T, req *http.Request, r response, lines []logLine) {
	t.Helper()
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		t.Fatalf("%s %s: no X-Request-Id", req.Method, req.URL.Path)
	}
	var access int
	for _, l := range lines {
		if l.RequestID != id {
			t.Errorf("%s %s (request %s) logged a line without its id: %s", req.Method, req.URL.Path, id, l.raw)
		}
		if l.Msg == "request" {
			access++
			if l.Status != r.StatusCode || l.Route == "" || l.Route == "unmatched" {
				t.Errorf("access line %s: want status %d and the route pattern", l.raw, r.StatusCode)
			}
		}
	}
	if access != 1 {
		t.Errorf("%s %s: %d access lines, want 1: %v", req.Method, req.URL.Path, access, lines)
	}
}

// removeBlob deletes the S3 object of content behind the store's back.
func (e *env) removeBlob(content string) {
	e.t.Helper()
	var key string
	err := e.store.Pool().QueryRow(context.Background(),
		`SELECT blob_key FROM content WHERE content_hash = sha256($1::bytea)`, []byte(content)).Scan(&key)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.bucket.Delete(context.Background(), []string{key}); err != nil {
		e.t.Fatal(err)
	}
}

func TestRequestIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name, sent string
		kept       bool
	}{
		{"none sent", "", false},
		{"a proxy's id is kept", "edge-7f3a.42:1", true},
		{"too long", strings.Repeat("a", 65), false},
		{"forged log fields", `x" "level":"ERROR`, false},
		{"spaces", "a b", false},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		var h []string
		if tt.sent != "" {
			h = []string{"X-Request-Id", tt.sent}
		}
		got := e.get("/healthz", h...).Header.Get("X-Request-Id")
		if tt.kept && got != tt.sent || !tt.kept && (got == tt.sent || len(got) < 16 || seen[got]) {
			t.Errorf("%s: sent %q, answered %q", tt.name, tt.sent, got)
		}
		seen[got] = true
	}
}

func TestLogHandlerWithoutRequest(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	logger := slog.New(api.LogHandler(api.LogHandler(slog.NewJSONHandler(&logs, nil)))).With("component", "x")
	logger.InfoContext(context.Background(), "outside any request")
	lines := parseLogs(t, logs.String())
	if len(lines) != 1 || strings.Contains(lines[0].raw, "request_id") || !strings.Contains(lines[0].raw, `"component":"x"`) {
		t.Errorf("got %v, want one line with its attributes and no request_id", lines)
	}
}
