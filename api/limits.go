package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/api/problem"
	"pastebin/api/request"
	"pastebin/cache"
	"pastebin/paste"
)

// limits are the guards against abuse: per-client rates of creates, of reports and of failed
// deletes, and bounds on the uploads held in memory at once, in all and per client.
type limits struct {
	creates  *clientRate     // nil when off
	reports  *clientRate     // nil when off
	keys     *keyRate        // creates with a creator key count against the key's rate
	failures *failureLimiter // nil when off
	uploads  *uploadSlots    // a pass-through when neither bound is set
	inFlight prometheus.Gauge
	refused  *prometheus.CounterVec
}

func newLimits(cfg Config, deps Deps, keys *paste.Keys) *limits {
	l := &limits{
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pastebin_uploads_in_flight", Help: "Creates reading or storing a body now.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pastebin_requests_refused_total",
			Help: "Requests refused by a limit: create_rate, key_create_rate, report_rate, delete_failures, admin_failures, uploads, client_uploads, upload_rate.",
		}, []string{"limit"}),
		uploads: newUploadSlots(cfg.MaxConcurrentUploads, cfg.MaxUploadsPerClient, cfg.MinUploadRate),
		keys:    &keyRate{keys: keys, access: cfg.CreateAccess, limiter: cache.NewLimiter("create-key", deps.RateRedis, cfg.RateKeyPrefix, deps.Logger)},
	}
	for _, limit := range []string{"create_rate", "key_create_rate", "report_rate", "delete_failures", "admin_failures", "uploads", "client_uploads", "upload_rate"} {
		// Every series from the start: an alert on increase() misses the first refusal of a
		// series that appears at 1.
		l.refused.WithLabelValues(limit)
	}
	deps.Registry.MustRegister(l.inFlight, l.refused)
	if cfg.CreateRate.On() {
		l.creates = newClientRate("create", cfg.CreateRate, cfg, deps, deps.Logger)
	}
	if cfg.ReportRate.On() {
		l.reports = newClientRate("report", cfg.ReportRate, cfg, deps, deps.Logger)
	}
	if cfg.DeleteFailureRate.On() {
		l.failures = &failureLimiter{rl: newClientRate("delete-failures", cfg.DeleteFailureRate, cfg, deps, deps.Logger)}
	}
	return l
}

// guardCreate runs a create past the create rate, then in an upload slot: a client over its rate
// is refused before it takes a slot or sends a byte of its body.
func (l *limits) guardCreate(writeError func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return l.limitCreates(writeError, l.inUploadSlot(writeError, next))
	}
}

// limitCreates refuses a client's creates past the create rate, before it takes an upload slot or
// sends a byte of its body; a create with a creator key counts against the key's rate instead
// (keyRate). Every create's answer tells the client its allowance.
func (l *limits) limitCreates(writeError func(http.ResponseWriter, *http.Request, error), next http.Handler) http.Handler {
	byClient := l.limitRate(l.creates, "create_rate", "pastes created", writeError, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.keys.guard(w, r, l, writeError, next) {
			return
		}
		byClient.ServeHTTP(w, r)
	})
}

// limitReports refuses a client's reports past the report rate, before its body is read.
func (l *limits) limitReports(writeError func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return l.limitRate(l.reports, "report_rate", "reports", writeError, next)
	}
}

// limitRate refuses a client's requests past rl (none when nil), counted as refused by limit; the
// answers tell the client its allowance.
func (l *limits) limitRate(rl *clientRate, limit, what string, writeError func(http.ResponseWriter, *http.Request, error), next http.Handler) http.Handler {
	if rl == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := rl.allow(r.Context(), request.ClientKey(r.Context()))
		setRateHeaders(w.Header(), v, rl.rate)
		if !v.Allowed {
			l.refused.WithLabelValues(limit).Inc()
			writeError(w, r, rateLimited(rl.rate, what, v.RetryAfter))
			return
		}
		next.ServeHTTP(w, r)
	})
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
	v := f.rl.check(ctx, request.ClientKey(ctx))
	return v.RetryAfter, !v.Allowed
}

// failed counts one failure of the client of ctx.
func (f *failureLimiter) failed(ctx context.Context) {
	if f != nil {
		f.rl.allow(ctx, request.ClientKey(ctx))
	}
}

// rateLimited is the answer to a client over rate, which may try again after retry.
func rateLimited(rate Rate, what string, retry time.Duration) *problem.Problem {
	retry = max(retry, time.Second)
	return problem.RateLimited.WithDetail(fmt.Sprintf("Too many %s from your address: at most %d every %s. Try again in %d seconds.",
		what, rate.Requests, paste.FormatDuration(rate.Window), problem.RetrySeconds(retry))).WithRetryAfter(retry)
}
