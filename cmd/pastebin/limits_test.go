package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pastebin/api"
)

// startHTTPServer serves handler with the limits of c on a real listener at 127.0.0.1, as serve
// does, and returns its address.
func startHTTPServer(t *testing.T, c limitsConfig, handler http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(context.Background(), c, handler, slog.New(slog.DiscardHandler))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func testLimits(t *testing.T) limitsConfig {
	t.Helper()
	var c serveConfig
	if err := parseFlags(c.flags(io.Discard), nil, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	return c.limits
}

// TestSlowlorisIsCutOff: a client that sends its headers a byte at a time is disconnected at the
// read-header timeout, and meanwhile the server goes on answering everyone else.
func TestSlowlorisIsCutOff(t *testing.T) {
	t.Parallel()
	c := testLimits(t)
	c.readHeaderTimeout = duration(300 * time.Millisecond)
	addr := startHTTPServer(t, c, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, conn) // returns when the server closes the connection
		closed <- time.Since(start)
	}()
	trickle := "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 100)
	var cut time.Duration
trickling:
	for i := range len(trickle) {
		if _, err := conn.Write([]byte{trickle[i]}); err != nil {
			break
		}
		if i == 3 { // while the slow client holds its connection, others are served
			if resp, err := http.Get("http://" + addr + "/"); err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("a normal request during the slow one: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
		}
		select {
		case cut = <-closed:
			break trickling
		case <-time.After(50 * time.Millisecond):
		}
	}
	if cut == 0 {
		t.Fatalf("the slow client still held its connection after %v", time.Since(start))
	}
	if cut > 2*time.Second {
		t.Errorf("cut off after %v, want about the 300ms read-header timeout", cut)
	}
}

// TestLargeHeadersRefused: serve answers headers over PASTEBIN_MAX_HEADER_SIZE with problem details
// (the API checks the size), while net/http's own bound, whose 431 is plain text, stops only what
// is far larger.
func TestLargeHeadersRefused(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["PASTEBIN_MAX_HEADER_SIZE"] = "4KiB"
	env["PASTEBIN_CLEANUP_WORKERS"] = "0"
	base, stop := startServe(t, env)
	defer stop()
	for _, tt := range []struct {
		size  int
		ctype string
	}{
		{8 << 10, "application/problem+json"},   // over the limit
		{16 << 10, "application/problem+json"},  // four times the limit: still under net/http's bound
		{64 << 10, "text/plain; charset=utf-8"}, // net/http's own 431, far past the limit
	} {
		req, _ := http.NewRequest(http.MethodGet, base+"/healthz", nil)
		req.Header.Set("X-Big", strings.Repeat("a", tt.size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Content-Type") != tt.ctype {
			t.Errorf("%d bytes of headers: got %d %s, want 431 %s", tt.size, resp.StatusCode, resp.Header.Get("Content-Type"), tt.ctype)
		}
	}
}

func TestLimitsConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"PASTEBIN_RATE_CREATE":            "100/1h",
		"PASTEBIN_RATE_REPORT":            "5/1d",
		"PASTEBIN_REPORT_RETENTION":       "30d",
		"PASTEBIN_RATE_DELETE_FAILURES":   "off",
		"PASTEBIN_TRUSTED_PROXIES":        "10.0.0.0/8, 192.168.1.7,fd00::/8",
		"PASTEBIN_MAX_CONCURRENT_UPLOADS": "4",
		"PASTEBIN_MAX_UPLOADS_PER_CLIENT": "2",
		"PASTEBIN_MIN_UPLOAD_RATE":        "1KiB/10s",
		"PASTEBIN_CLIENT_IP_HEADER":       "x-real-ip",
		"PASTEBIN_READ_HEADER_TIMEOUT":    "5s",
	}
	cfg, err := parseServeConfig(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.limits
	if api.Rate(got.createRate) != (api.Rate{Requests: 100, Window: time.Hour}) || api.Rate(got.deleteFailureRate).On() {
		t.Errorf("rates: create %v, delete failures %v", api.Rate(got.createRate), api.Rate(got.deleteFailureRate))
	}
	if api.Rate(got.reportRate) != (api.Rate{Requests: 5, Window: 24 * time.Hour}) || time.Duration(cfg.expiry.reportRetention) != 30*24*time.Hour {
		t.Errorf("report rate %v, report retention %v", api.Rate(got.reportRate), time.Duration(cfg.expiry.reportRetention))
	}
	if d, _ := parseServeConfig(nil, func(string) string { return "" }, io.Discard); api.Rate(d.limits.reportRate).String() != "20/1h" ||
		time.Duration(d.expiry.reportRetention) != 90*24*time.Hour {
		t.Errorf("defaults: report rate %v, retention %v; want 20/1h and 90 days", api.Rate(d.limits.reportRate), time.Duration(d.expiry.reportRetention))
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"), netip.MustParsePrefix("fd00::/8")}
	if diff := cmp.Diff(want, []netip.Prefix(got.trustedProxies), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("trusted proxies (-want +got):\n%s", diff)
	}
	if got.maxUploads != 4 || got.maxClientUploads != 2 || time.Duration(got.readHeaderTimeout) != 5*time.Second {
		t.Errorf("uploads %d, per client %d, read-header timeout %v", got.maxUploads, got.maxClientUploads, time.Duration(got.readHeaderTimeout))
	}
	if api.UploadRate(got.minUploadRate) != (api.UploadRate{Bytes: 1024, Window: 10 * time.Second}) || got.clientIPHeader != "X-Real-Ip" {
		t.Errorf("min upload rate %v, client address header %q", got.minUploadRate, got.clientIPHeader)
	}
	for k, v := range map[string]string{"PASTEBIN_RATE_CREATE": "lots", "PASTEBIN_RATE_REPORT": "many", "PASTEBIN_REPORT_RETENTION": "forever", "PASTEBIN_TRUSTED_PROXIES": "10.0.0.0/33",
		"PASTEBIN_MIN_UPLOAD_RATE": "fast", "PASTEBIN_CLIENT_IP_HEADER": "Forwarded"} {
		_, err := parseServeConfig(nil, func(key string) string { return map[string]string{k: v}[key] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%q: got error %v, want one naming the variable", k, v, err)
		}
	}
}
