package api_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestUnknownMethodsKeepMetricsBounded: a client may send any token as a method. Each is answered
// 501 before routing, and the metrics and the access log call every one of them "other": however
// many a client invents, /metrics keeps the same series.
func TestUnknownMethodsKeepMetricsBounded(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	e := newEnv(t, withLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	invented := func(i int) string { return fmt.Sprintf("X%dY%s", i, strings.Repeat("A", i*41)) } // up to 2 KB
	paths := []string{"/", "/api/v1/pastes", "/abcdefghijk", "/no/such/route", "/admin/cleanup", "/metrics"}
	var wrong []string
	send := func(i int) {
		t.Helper()
		r := e.do(e.request(invented(i), paths[i%len(paths)], nil))
		var p struct{ Type string }
		_ = json.Unmarshal(r.body, &p)
		if r.StatusCode != http.StatusNotImplemented || p.Type != "/problems/method-not-implemented" {
			wrong = append(wrong, fmt.Sprintf("%.20s… %s: %d %s", invented(i), paths[i%len(paths)], r.StatusCode, p.Type))
		}
	}
	e.get("/metrics")
	send(0)
	before := e.get("/metrics").text()
	for i := 1; i <= 50; i++ {
		send(i)
	}
	after := e.get("/metrics").text()
	if len(wrong) > 0 {
		t.Errorf("%d of 51 invented methods not answered 501 method-not-implemented, such as %s", len(wrong), wrong[0])
	}
	if got, want := seriesCount(after), seriesCount(before); got != want {
		t.Errorf("/metrics has %d series after 50 invented methods, %d before: want no new series\n%s",
			got, want, grep(after, "pastebin_http_requests_total"))
	}
	if !strings.Contains(after, `method="other"`) {
		t.Errorf(`/metrics counts no method="other":%s`, grep(after, "pastebin_http_requests_total"))
	}
	for i := range 51 {
		if m := invented(i); strings.Contains(after, m) || strings.Contains(logs.String(), m) {
			t.Fatalf("the invented method %.20s… is in /metrics or the log", m)
		}
	}
}

// seriesCount counts the samples of a Prometheus text exposition: its lines but comments.
func seriesCount(exposition string) int {
	n := 0
	for _, l := range strings.Split(exposition, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			n++
		}
	}
	return n
}
