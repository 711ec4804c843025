package api

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/api/request"
)

// observeRequests writes one access log line per request (method, route pattern, status, duration,
// bytes written, the client's address) and records the request in the HTTP metrics: one wrapper and
// one clock for both. The method is request.MethodLabel's, as the metrics have it. Never the raw path or
// query: a paste's code is what lets anyone read it, so logs name routes, not pastes. Probes and
// scrapes are logged at debug level, where their steady beat does not bury the requests of people.
func observeRequests(logger *slog.Logger, metrics *httpMetrics, users interface{ Observe(time.Duration) }) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(sw, r)
			took, route := time.Since(start), request.RoutePattern(r)
			method := request.MethodLabel(r)
			metrics.record(route, method, sw.status, took)
			level := slog.LevelInfo
			if route == "/healthz" || route == "/readyz" || route == "/metrics" {
				level = slog.LevelDebug
			}
			if users != nil && usersRoute(route) {
				users.Observe(took)
			}
			logger.LogAttrs(r.Context(), level, "request", slog.String("method", method), slog.String("route", route),
				slog.Int("status", sw.status), slog.Duration("duration", took),
				slog.Int64("bytes", sw.bytes), slog.String("client", request.ClientAddr(r.Context())))
		})
	}
}

// httpMetrics counts requests and times them by route pattern (never the raw path), method and
// status. Every label comes from a closed set the server names (methodLabel: "other" for a method
// it does not know), never from what a client wrote: each value is a series kept for good.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// series are the counter and histogram of each label set seen, looked up once: the vectors'
	// own lookup hashes the labels and allocates on every request.
	mu     sync.RWMutex
	series map[seriesKey]seriesPair
}

type seriesKey struct {
	route, method string
	status        int
}

type seriesPair struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pastebin_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pastebin_http_request_duration_seconds", Help: "HTTP request latency by route, method and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method", "status"}),
	}
	m.series = map[seriesKey]seriesPair{}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// record counts one answered request and its latency.
func (m *httpMetrics) record(route, method string, status int, d time.Duration) {
	k := seriesKey{route, method, status}
	m.mu.RLock()
	s, ok := m.series[k]
	m.mu.RUnlock()
	if !ok {
		code := strconv.Itoa(status)
		s = seriesPair{m.requests.WithLabelValues(route, method, code), m.duration.WithLabelValues(route, method, code)}
		m.mu.Lock()
		m.series[k] = s
		m.mu.Unlock()
	}
	s.requests.Inc()
	s.duration.Observe(d.Seconds())
}

// statusWriter remembers the status a handler wrote, and how many bytes of body.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	bytes       int64
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (deadlines, flushing).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// usersRoute reports whether route is one that users call: every route but the probes, the
// metrics and the operators' /admin. Their latency is what the cleanup drain's pacing keeps within
// its budget (docs/design.md, "Pacing the drain").
func usersRoute(route string) bool {
	switch {
	case route == "/healthz", route == "/readyz", route == "/metrics":
		return false
	case route == "/admin", strings.HasPrefix(route, "/admin/"):
		return false
	}
	return true
}
