package api_test

import (
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/api"
)

// TestStrictTransportSecurity: every answer to a request that came over HTTPS, directly or through a
// trusted proxy that says so, carries Strict-Transport-Security, errors included; no answer over
// plain HTTP does, nor one whose X-Forwarded-Proto comes from an untrusted peer.
func TestStrictTransportSecurity(t *testing.T) {
	t.Parallel()
	const want = "max-age=31536000"
	year := withConfig(func(c *api.Config) { c.HSTSMaxAge = 365 * 24 * time.Hour })
	trusted := withConfig(func(c *api.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })

	e := newEnv(t, year, trusted)
	p := e.create("over https", "")
	for _, tt := range []struct {
		name, path string
		headers    []string
		want       string
	}{
		{"plain HTTP", "/" + p.code, nil, ""},
		{"a trusted proxy's HTTPS", "/" + p.code, []string{"X-Forwarded-Proto", "https"}, want},
		{"a trusted proxy's HTTPS, an error", "/nothing-here-at-all", []string{"X-Forwarded-Proto", "https"}, want},
		{"a trusted proxy's HTTP", "/" + p.code, []string{"X-Forwarded-Proto", "http"}, ""},
	} {
		if got := e.get(tt.path, tt.headers...).Header.Get("Strict-Transport-Security"); got != tt.want {
			t.Errorf("%s: Strict-Transport-Security %q, want %q", tt.name, got, tt.want)
		}
	}

	untrusted := newEnv(t, year)
	if got := untrusted.get("/healthz", "X-Forwarded-Proto", "https").Header.Get("Strict-Transport-Security"); got != "" {
		t.Errorf("X-Forwarded-Proto from an untrusted peer: Strict-Transport-Security %q, want none", got)
	}

	deps := untrusted.deps
	deps.Registry = prometheus.NewRegistry()
	tls := httptest.NewTLSServer(api.NewServer(untrusted.cfg, deps))
	t.Cleanup(tls.Close)
	resp, err := tls.Client().Get(tls.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Strict-Transport-Security"); got != want {
		t.Errorf("over TLS to the server itself: Strict-Transport-Security %q, want %q", got, want)
	}

	off := newEnv(t, trusted)
	if got := off.get("/healthz", "X-Forwarded-Proto", "https").Header.Get("Strict-Transport-Security"); got != "" {
		t.Errorf("with HSTS off: Strict-Transport-Security %q, want none", got)
	}
}
