package api

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-chi/httprate"
	httprateredis "github.com/go-chi/httprate-redis"
	"github.com/prometheus/client_golang/prometheus"
)

// uploadWait is how long a create waits for an upload slot before it is answered 503.
const uploadWait = time.Second

// limits are the guards against abuse: per-client rates of creates and of failed deletes, and a
// bound on the uploads held in memory at once.
type limits struct {
	creates  func(http.Handler) http.Handler // the create rate; a pass-through when off
	failures *failureLimiter                 // nil when off
	uploads  chan struct{}                   // one token per upload in progress; nil: no bound
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
			Name: "pastebin_requests_refused_total", Help: "Requests refused by a limit: create_rate, delete_failures, uploads.",
		}, []string{"limit"}),
	}
	deps.Registry.MustRegister(l.inFlight, l.refused)
	if cfg.MaxConcurrentUploads > 0 {
		l.uploads = make(chan struct{}, cfg.MaxConcurrentUploads)
	}
	if cfg.CreateRate.On() {
		l.creates = l.createLimiter(cfg, deps, ps)
	}
	if cfg.DeleteFailureRate.On() {
		rl := newRateLimiter("delete-failures", cfg.DeleteFailureRate, cfg, deps, ps.logger)
		l.failures = &failureLimiter{rl: rl, rate: cfg.DeleteFailureRate, logger: ps.logger}
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

func (l *limits) createLimiter(cfg Config, deps Deps, ps *pasteService) func(http.Handler) http.Handler {
	rate := cfg.CreateRate
	return newRateLimiter("create", rate, cfg, deps, ps.logger,
		httprate.WithKeyFuncs(func(r *http.Request) (string, error) { return rateKey(r.Context()), nil }),
		httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
			l.refused.WithLabelValues("create_rate").Inc()
			ps.writeError(w, r, rateLimited(rate, "pastes created"))
		}),
		// Unreachable with either counter: the local one never fails, and the Redis one falls back
		// to the local one on any error. Should that change, the failure is a logged 500.
		httprate.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			ps.writeError(w, r, fmt.Errorf("create rate limit: %w", err))
		}),
	).Handler
}

// inUploadSlot bounds the creates that read and store a body at once. Each may hold up to the
// paste size limit in memory, so the bound caps that memory however many clients upload. Over it,
// a create waits up to uploadWait: that absorbs a burst of ordinary uploads, which finish in
// milliseconds, at the cost of a goroutine and an unread connection, not of a body in memory.
// Past the wait it is answered 503 with Retry-After rather than queued without end. A slow upload
// keeps its slot until the server's read timeout cuts it off.
func (l *limits) inUploadSlot(writeError func(http.ResponseWriter, *http.Request, error), next http.Handler) http.Handler {
	if l.uploads == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := time.NewTimer(uploadWait)
		defer wait.Stop()
		select {
		case l.uploads <- struct{}{}:
		case <-wait.C:
			l.refused.WithLabelValues("uploads").Inc()
			writeError(w, r, errBusy.withDetail("Too many uploads are in progress. Try again shortly.").withRetryAfter(time.Second))
			return
		case <-r.Context().Done():
			return // the client gave up waiting
		}
		l.inFlight.Inc()
		defer func() {
			l.inFlight.Dec()
			<-l.uploads
		}()
		next.ServeHTTP(w, r)
	})
}

// newRateLimiter counts a rate per client. With a Redis client the counts live in Redis, so the
// replicas add up to one limit (peers.md 5.10: in-memory limiters multiply by the replica count).
// When Redis fails, httprate-redis counts in this process's memory until Redis answers again:
// creates go on, limited per replica for that while (DESIGN: Redis down means slower, not broken).
// The counter is always given explicitly, which keeps every limiter's windows on the wall clock,
// the same on every replica; failureLimiter.failed relies on that.
func newRateLimiter(name string, rate Rate, cfg Config, deps Deps, logger *slog.Logger, opts ...httprate.Option) *httprate.RateLimiter {
	var counter httprate.LimitCounter = httprate.NewLocalLimitCounter(rate.Window)
	if deps.RateRedis != nil {
		counter = httprateredis.NewCounter(&httprateredis.Config{
			Client: deps.RateRedis, PrefixKey: cfg.RateKeyPrefix + name, WindowLength: rate.Window,
			// Logged without a request's context: the switch is the process's, not a request's.
			OnFallbackChange: func(local bool) {
				if local {
					logger.Warn("redis unavailable: rate limit counted in this process only", "limit", name)
					return
				}
				logger.Info("rate limit counted in redis again", "limit", name)
			},
		})
	}
	return httprate.NewRateLimiter(rate.Requests, rate.Window, append(opts, httprate.WithLimitCounter(counter))...)
}

// failureLimiter counts a client's failed deletes (a wrong token): guessing tokens is the abuse it
// stops, so a right token or a malformed request costs nothing. A client past the limit is refused
// every delete until its window passes, before its token is checked, so that even a right guess
// then tells it nothing.
type failureLimiter struct {
	rl     *httprate.RateLimiter
	rate   Rate
	logger *slog.Logger
}

// exhausted reports whether the client of ctx has used up its failures.
func (f *failureLimiter) exhausted(ctx context.Context) bool {
	if f == nil {
		return false
	}
	_, rate, err := f.rl.Status(rateKey(ctx))
	if err != nil {
		// The token check still stands; a counter that fails must not lock owners out.
		f.logger.WarnContext(ctx, "delete failure limit not checked", "err", err)
		return false
	}
	return int(math.Round(rate)) >= f.rate.Requests
}

// failed counts one failure of the client of ctx, in the current wall-clock window.
func (f *failureLimiter) failed(ctx context.Context) {
	if f == nil {
		return
	}
	window := time.Now().UTC().Truncate(f.rate.Window)
	if err := f.rl.Counter().IncrementBy(rateKey(ctx), window, 1); err != nil {
		f.logger.WarnContext(ctx, "delete failure not counted", "err", err)
	}
}

// rateLimited is the answer to a client over rate.
func rateLimited(rate Rate, what string) *problem {
	return errRateLimited.withDetail(fmt.Sprintf("Too many %s from your address: at most %d every %s. Try again in %d seconds.",
		what, rate.Requests, formatDuration(rate.Window), int(rate.Window.Seconds()))).withRetryAfter(rate.Window)
}

// clientCtxKey is the context key of the client's address.
type clientCtxKey struct{}

// identifyClients resolves the address each request comes from, for the rate limits and the access
// log: the TCP peer, unless the peer is in a trusted proxy range; then the rightmost address of
// X-Forwarded-For outside those ranges, or else X-Real-IP. Anyone can write those headers, so they
// are never read from another peer (peers.md: a spoofed X-Forwarded-For bought transfer.sh clients
// a fresh rate bucket per request). chi's ClientIPFrom* middlewares do the parsing.
func identifyClients(trusted []netip.Prefix) func(http.Handler) http.Handler {
	resolve := middleware.ClientIPFromRemoteAddr
	if len(trusted) > 0 {
		cidrs := make([]string, len(trusted))
		for i, p := range trusted {
			cidrs[i] = p.String()
		}
		fromXFF, fromRealIP := middleware.ClientIPFromXFF(cidrs...), middleware.ClientIPFromHeader("X-Real-IP", cidrs...)
		resolve = func(next http.Handler) http.Handler { return fromRealIP(fromXFF(next)) } // XFF, run last, wins
	}
	return func(next http.Handler) http.Handler {
		return resolve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ip := middleware.GetClientIP(r.Context())
			if ip == "" {
				// A trusted proxy that named no usable client: its own address, so that its
				// requests share one bucket rather than escape the limits.
				ip = peerHost(r.RemoteAddr)
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientCtxKey{}, ip)))
		}))
	}
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
func rateKey(ctx context.Context) string { return httprate.CanonicalizeIP(clientAddr(ctx)) }

// setRetryAfter tells the client, in whole seconds, when to try again.
func setRetryAfter(h http.Header, d time.Duration) {
	if d > 0 {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	}
}
