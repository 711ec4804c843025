package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"pastebin/api"
)

// FuzzRouter sends requests of any shape through the whole server, over the test services
// (PostgreSQL, Redis, S3: make test and make fuzz start them). Every request that net/http's server
// would hand to a handler, the server answers without an internal error: no 500, and no 5xx but 501
// (a method no route serves) and 503 (a service away, with Retry-After); every error is a problem
// with a type /problems lists, or a page; nothing is logged at ERROR (an internal error, a panic).
// The seeds are the shapes of TestHostileRequests.
func FuzzRouter(f *testing.F) {
	for _, h := range hostileRequests() {
		if len(h.head)+len(h.body) <= 8<<10 { // larger ones slow every mutation down
			f.Add(h.head, []byte(h.body))
		}
	}
	var logs logBuffer
	e := newEnv(f, withAdmin(adminToken, 0), withLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		withConfig(func(c *api.Config) { c.MaxHeaderBytes = 64 << 10 }))
	known := problemTypes(f, e)
	handler := e.srv.Config.Handler
	f.Fuzz(func(t *testing.T, head string, body []byte) {
		r, ok := readAsServer(append([]byte(strings.ReplaceAll(head, "\n", "\r\n")+"\r\n"), body...))
		if !ok {
			return // net/http answers it itself, before any handler
		}
		before := len(logs.String())
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		if l := logs.String()[before:]; strings.Contains(l, `"level":"ERROR"`) {
			t.Errorf("%q: logged an error: %s", head, l)
		}
		checkNoInternalError(t, head, w.Result(), w.Body.Bytes(), known)
	})
}

// problemTypes are the types /problems lists.
func problemTypes(tb testing.TB, e *env) map[string]bool {
	tb.Helper()
	r := e.get("/problems")
	var list []struct{ Type string }
	if err := json.Unmarshal(r.body, &list); err != nil || len(list) == 0 {
		tb.Fatalf("/problems: %v: %s", err, r.body)
	}
	known := map[string]bool{}
	for _, p := range list {
		known[p.Type] = true
	}
	return known
}

// readAsServer reads a request from raw as net/http's server does, and reports false for one that
// the server would answer itself (400, 417, 431, 505) rather than hand to a handler: what
// http.ReadRequest refuses, and what the server checks after it (conn.readRequest in net/http).
// Its checks of the Host are stricter than the server's, which only skips some inputs.
func readAsServer(raw []byte) (*http.Request, bool) {
	if len(raw) > http.DefaultMaxHeaderBytes {
		return nil, false
	}
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil || r.ProtoMajor != 1 || len(r.Header.Values("Host")) > 1 || !plainHost(r.Host) ||
		r.Host == "" && r.ProtoAtLeast(1, 1) && r.Method != http.MethodConnect {
		return nil, false
	}
	if e := r.Header.Get("Expect"); e != "" && !strings.EqualFold(e, "100-continue") {
		return nil, false
	}
	for name, values := range r.Header {
		if name == "" || strings.ContainsFunc(name, notTokenRune) {
			return nil, false
		}
		for _, v := range values {
			if strings.ContainsFunc(v, func(c rune) bool { return c < ' ' && c != '\t' || c == 0x7f }) {
				return nil, false
			}
		}
	}
	r.Header.Del("Host")
	r.RemoteAddr = "192.0.2.1:41000"
	return r, true
}

func plainHost(h string) bool {
	return !strings.ContainsFunc(h, func(c rune) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune(".-:[]_", c))
	})
}

// notTokenRune reports whether c may not be in a header name (RFC 9110, section 5.6.2).
func notTokenRune(c rune) bool {
	return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c))
}

// checkNoInternalError checks an answer of the server for the marks of an internal error.
func checkNoInternalError(t *testing.T, head string, resp *http.Response, body []byte, known map[string]bool) {
	t.Helper()
	switch s := resp.StatusCode; {
	case s == http.StatusInternalServerError:
		t.Errorf("%q: answered 500: %.300s", head, body)
	case s == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "":
		t.Errorf("%q: answered 503 without Retry-After: %.300s", head, body)
	case s >= 500 && s != http.StatusNotImplemented && s != http.StatusServiceUnavailable:
		t.Errorf("%q: answered %d: %.300s", head, s, body)
	}
	if resp.StatusCode < 400 || len(body) == 0 { // a HEAD's error has no body
		return
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/html"):
	case ct == "application/problem+json":
		var p struct {
			Type   string
			Status int
		}
		if err := json.Unmarshal(body, &p); err != nil || !known[p.Type] || p.Status != resp.StatusCode {
			t.Errorf("%q: answered %d with problem %.300s: want a type /problems lists, and its status", head, resp.StatusCode, body)
		}
	default:
		t.Errorf("%q: answered %d as %s: want problem details or a page", head, resp.StatusCode, ct)
	}
}
