package api

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// limits are the guards against abuse: per-client rates of creates and of failed deletes, and
// bounds on the uploads held in memory at once, in all and per client.
type limits struct {
	creates  func(http.Handler) http.Handler // the create rate; a pass-through when off
	failures *failureLimiter                 // nil when off
	uploads  *uploadSlots                    // a pass-through when neither bound is set
	inFlight prometheus.Gauge
	refused  *prometheus.CounterVec
}

func newLimits(cfg Config, deps Deps, ps *pasteService) *limits {
	l := &limits{
		creates: func(next http.Handler) http.Handler { return next },
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pastebin_uploads_in_flight", Help: "Creates reading or storing a body now.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pastebin_requests_refused_total",
			Help: "Requests refused by a limit: create_rate, delete_failures, admin_failures, uploads, client_uploads, upload_rate.",
		}, []string{"limit"}),
		uploads: newUploadSlots(cfg.MaxConcurrentUploads, cfg.MaxUploadsPerClient, cfg.MinUploadRate),
	}
	for _, limit := range []string{"create_rate", "delete_failures", "admin_failures", "uploads", "client_uploads", "upload_rate"} {
		// Every series from the start: an alert on increase() misses the first refusal of a
		// series that appears at 1.
		l.refused.WithLabelValues(limit)
	}
	deps.Registry.MustRegister(l.inFlight, l.refused)
	if cfg.CreateRate.On() {
		l.creates = l.createLimiter(cfg, deps, ps)
	}
	if cfg.DeleteFailureRate.On() {
		l.failures = &failureLimiter{rl: newClientRate("delete-failures", cfg.DeleteFailureRate, cfg, deps, ps.logger)}
	}
	return l
}

// guardCreate runs a create past the create rate, then in an upload slot: a client over its rate
// is refused before it takes a slot or sends a byte of its body.
func (l *limits) guardCreate(writeError func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return l.creates(l.inUploadSlot(writeError, next))
	}
}

// createLimiter refuses a client's creates past the create rate, before it takes an upload slot or
// sends a byte of its body. Every create's answer tells the client its allowance.
func (l *limits) createLimiter(cfg Config, deps Deps, ps *pasteService) func(http.Handler) http.Handler {
	rl := newClientRate("create", cfg.CreateRate, cfg, deps, ps.logger)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			v := rl.allow(r.Context(), rateKey(r.Context()))
			setRateHeaders(w.Header(), v, rl.rate)
			if !v.Allowed {
				l.refused.WithLabelValues("create_rate").Inc()
				ps.writeError(w, r, rateLimited(rl.rate, "pastes created", v.RetryAfter))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// failureLimiter counts a client's failed deletes (a wrong token): guessing tokens is the abuse it
// stops, so a right token or a malformed request costs nothing. A client past the limit is refused
// every delete, before its token is checked, until its allowance earns one back, so that even a
// right guess then tells it nothing.
type failureLimiter struct {
	rl *clientRate
}

// exhausted reports whether the client of ctx has used up its failures, and when it may try again.
func (f *failureLimiter) exhausted(ctx context.Context) (time.Duration, bool) {
	if f == nil {
		return 0, false
	}
	v := f.rl.check(ctx, rateKey(ctx))
	return v.RetryAfter, !v.Allowed
}

// failed counts one failure of the client of ctx.
func (f *failureLimiter) failed(ctx context.Context) {
	if f != nil {
		f.rl.allow(ctx, rateKey(ctx))
	}
}

// rateLimited is the answer to a client over rate, which may try again after retry.
func rateLimited(rate Rate, what string, retry time.Duration) *problem {
	retry = max(retry, time.Second)
	return errRateLimited.withDetail(fmt.Sprintf("Too many %s from your address: at most %d every %s. Try again in %d seconds.",
		what, rate.Requests, formatDuration(rate.Window), retrySeconds(retry))).withRetryAfter(retry)
}

// clientCtxKey is the context key of the client's address.
type clientCtxKey struct{}

// identifyClients resolves the address each request comes from, for the rate limits and the access
// log: the TCP peer, unless the peer is in a trusted proxy range; then the address in the one header
// the proxy sets (header: X-Forwarded-For, its rightmost entry outside those ranges, or a header of
// one address such as X-Real-IP). Anyone can write any header, so only that one is believed, and
// only from a trusted peer: behind a proxy that sets X-Real-IP and passes X-Forwarded-For on as the
// client wrote it, believing X-Forwarded-For too would give a client a fresh rate bucket per
// request. chi's ClientIPFrom* middlewares do the parsing.
func identifyClients(trusted []netip.Prefix, header string) func(http.Handler) http.Handler {
	resolve := middleware.ClientIPFromRemoteAddr
	if len(trusted) > 0 {
		cidrs := make([]string, len(trusted))
		for i, p := range trusted {
			cidrs[i] = p.String()
		}
		if header = http.CanonicalHeaderKey(cmp.Or(header, forwardedFor)); header == forwardedFor {
			resolve = middleware.ClientIPFromXFF(cidrs...)
		} else {
			resolve = middleware.ClientIPFromHeader(header, cidrs...)
		}
	}
	return func(next http.Handler) http.Handler {
		return resolve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ip := middleware.GetClientIP(r.Context())
			if ip == "" {
				// A trusted proxy that named no usable client: its own address, so that its
				// requests share one bucket rather than escape the limits.
				ip = peerHost(r.RemoteAddr)
			}
			ctx := context.WithValue(r.Context(), clientCtxKey{}, ip)
			if strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") && fromTrusted(r, trusted) {
				ctx = context.WithValue(ctx, httpsCtxKey{}, true)
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		}))
	}
}

// forwardedFor is the default client address header: a list that each proxy appends to.
const forwardedFor = "X-Forwarded-For"

// httpsCtxKey marks a request that a trusted proxy received over HTTPS (X-Forwarded-Proto).
type httpsCtxKey struct{}

// viaHTTPS reports whether the client's request came over HTTPS: to this server, or to a trusted
// proxy that terminated TLS and said so. Its answers then name https addresses and its cookies
// are Secure.
func viaHTTPS(r *http.Request) bool {
	https, _ := r.Context().Value(httpsCtxKey{}).(bool)
	return r.TLS != nil || https
}

// fromTrusted reports whether the request's TCP peer is in a trusted proxy range.
func fromTrusted(r *http.Request, trusted []netip.Prefix) bool {
	addr, err := netip.ParseAddr(peerHost(r.RemoteAddr))
	if err != nil {
		return false
	}
	addr = addr.Unmap().WithZone("")
	for _, p := range trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

func peerHost(remoteAddr string) string {
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}

// clientAddr is the address identifyClients found for the request of ctx.
func clientAddr(ctx context.Context) string {
	ip, _ := ctx.Value(clientCtxKey{}).(string)
	return ip
}

// rateKey is the client's rate-limit bucket: its address, or its /64 for IPv6, since one IPv6
// client usually holds a whole /64 and could otherwise take a fresh bucket per address.
func rateKey(ctx context.Context) string {
	addr, err := netip.ParseAddr(clientAddr(ctx))
	if err != nil {
		return clientAddr(ctx)
	}
	if addr = addr.Unmap().WithZone(""); addr.Is4() {
		return addr.String()
	}
	p, _ := addr.Prefix(64)
	return p.String()
}

// setRetryAfter tells the client, in whole seconds, when to try again.
func setRetryAfter(h http.Header, d time.Duration) {
	if d > 0 {
		h.Set("Retry-After", strconv.Itoa(retrySeconds(d)))
	}
}

func retrySeconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }
