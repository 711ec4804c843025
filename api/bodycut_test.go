package api_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/api"
	"pastebin/api/request"
)

// exchange sends head and then body on a connection of its own and returns the server's answer,
// checked against openapi.yaml. With hangUp the client then shuts its side, so the body ends before
// its declared length; without, it stays silent until the server gives up on it.
func (e *env) exchange(t *testing.T, addr, head, body string, hangUp bool) (*http.Response, string) {
	t.Helper()
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(strings.ReplaceAll(head, "\n", "\r\n") + "\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute)) // bounds the test, never reached when the server answers
	if _, err := io.WriteString(conn, strings.ReplaceAll(head, "\n", "\r\n")+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	if hangUp {
		_ = conn.(*net.TCPConn).CloseWrite()
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s: no answer: %v", strings.SplitN(head, "\n", 2)[0], err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	e.checkSpec(req, resp, b)
	return resp, string(b)
}

// cutShortCreates are creates on every create route whose body ends before the length it declared.
var cutShortCreates = []struct{ name, head, body string }{
	{"raw", "POST / HTTP/1.1\nHost: x\nContent-Length: 100\n", "the first bytes"},
	{"raw chunked", "POST / HTTP/1.1\nHost: x\nTransfer-Encoding: chunked\n", "20\r\nthe first bytes"},
	{"PUT", "PUT /notes.txt HTTP/1.1\nHost: x\nContent-Length: 100\n", "the first bytes"},
	{"multipart", "POST / HTTP/1.1\nHost: x\nContent-Type: multipart/form-data; boundary=XX\nContent-Length: 500\n",
		"--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nthe first bytes"},
	{"JSON", "POST /api/v1/pastes HTTP/1.1\nHost: x\nContent-Type: application/json\nContent-Length: 100\n",
		`{"content": "the first bytes`},
	{"web form", "POST / HTTP/1.1\nHost: x\nContent-Type: application/x-www-form-urlencoded\nAccept: text/html\nContent-Length: 100\n",
		"content=the+first+bytes"},
	{"web multipart form", "POST / HTTP/1.1\nHost: x\nContent-Type: multipart/form-data; boundary=XX\nAccept: text/html\nContent-Length: 500\n",
		"--XX\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\nthe first bytes"},
}

// TestCreateCutShort: a create whose body ends early is the client's fault: 400, one short warning
// in the log, nothing stored, never a 500.
func TestCreateCutShort(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	e := newEnv(t, withLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	for _, tt := range cutShortCreates {
		before := len(logs.String())
		resp, body := e.exchange(t, addr, tt.head, tt.body, true)
		browser := strings.Contains(tt.head, "text/html")
		if resp.StatusCode != http.StatusBadRequest || !browser && !strings.Contains(body, "/problems/incomplete-body") {
			t.Errorf("%s: got %d %.200s, want 400 incomplete-body", tt.name, resp.StatusCode, body)
		}
		var warnings int
		for _, l := range parseLogs(t, logs.String()[before:]) {
			switch {
			case l.Msg == "request body cut short" && strings.Contains(l.raw, `"level":"WARN"`):
				warnings++
			case l.Msg != "request":
				t.Errorf("%s: logged %s", tt.name, l.raw)
			}
		}
		if warnings != 1 {
			t.Errorf("%s: %d warnings, want 1", tt.name, warnings)
		}
	}
	if n := e.count(`SELECT count(*) FROM pastes`); n != 0 {
		t.Errorf("%d pastes stored from bodies cut short", n)
	}
}

// TestCreateTooSlow: a body that stops coming until the server's read timeout is 408.
func TestCreateTooSlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	deps := e.deps
	deps.Registry = prometheus.NewRegistry()
	srv := httptest.NewUnstartedServer(api.NewServer(e.cfg, deps))
	srv.Config.ReadTimeout = 300 * time.Millisecond // passes while the client sends nothing more
	srv.Start()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tt := range cutShortCreates {
		resp, body := e.exchange(t, addr, tt.head, tt.body, false)
		browser := strings.Contains(tt.head, "text/html")
		if resp.StatusCode != http.StatusRequestTimeout || !browser && !strings.Contains(body, "/problems/body-timeout") {
			t.Errorf("%s: got %d %.200s, want 408 body-timeout", tt.name, resp.StatusCode, body)
		}
	}
}

// TestClientGoneIsNotAnInternalError: a client that hangs up while its request is served cancels
// the request's context, which fails whatever the server was doing for it. That is the client's
// doing: one warning, never an internal error, and the answer nobody reads is logged as 499.
func TestClientGoneIsNotAnInternalError(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	e := newEnv(t, withLogger(slog.New(request.LogHandler(slog.NewJSONHandler(&logs, nil)))))
	p := e.create("read by a client that hangs up", "")
	deps := e.deps
	deps.Registry = prometheus.NewRegistry()
	handler := api.NewServer(e.cfg, deps)
	for _, tt := range []struct{ method, path, body string }{
		{http.MethodPost, "/", "created for a client that hangs up"},
		{http.MethodGet, "/raw/" + p.code, ""},
		{http.MethodGet, "/api/v1/pastes/" + p.code, ""},
		{http.MethodDelete, "/" + p.code, ""},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // as net/http does when the connection closes
		req := httptest.NewRequestWithContext(ctx, tt.method, "/"+strings.TrimPrefix(tt.path, "/"), strings.NewReader(tt.body))
		req.Header.Set("Authorization", "Bearer "+p.token)
		before := len(logs.String())
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		var warned bool
		for _, l := range parseLogs(t, logs.String()[before:]) {
			switch {
			case l.Msg == "client went away":
				warned = true
			case l.Msg != "request" && !strings.Contains(l.Msg, "redis"):
				t.Errorf("%s %s: logged %s", tt.method, tt.path, l.raw)
			}
		}
		if w.Code != 499 || !warned {
			t.Errorf("%s %s: answered %d, warned %v; want 499 and a warning", tt.method, tt.path, w.Code, warned)
		}
	}
}

// TestBurnReaderHangsUp: a reader of a burn-after-reading paste who hangs up before the server took
// the paste leaves it for the next reader (README, Create: burn).
func TestBurnReaderHangsUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("read once, by whoever stays", "?burn=true")
	deps := e.deps
	deps.Registry = prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := httptest.NewRecorder()
	api.NewServer(e.cfg, deps).ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodPost, "/raw/"+p.code, nil))
	if w.Code != 499 {
		t.Errorf("the reader who hung up: %d, want 499", w.Code)
	}
	if r := e.do(e.request(http.MethodPost, "/raw/"+p.code, nil)); r.StatusCode != http.StatusOK || r.text() != "read once, by whoever stays" {
		t.Errorf("the next reader: %d %q, want the paste", r.StatusCode, r.body)
	}
	if r := e.do(e.request(http.MethodPost, "/raw/"+p.code, nil)); r.StatusCode != http.StatusGone {
		t.Errorf("after it: %d, want 410", r.StatusCode)
	}
}
