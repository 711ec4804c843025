package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// recoverPanics turns a panic in a handler into a logged 500, answered as every error is (a page to
// browsers, problem details to the rest), never a stack trace to the client.
func recoverPanics(logger *slog.Logger, writeError func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v) // net/http's own way to abort a response: let it through
				}
				logger.ErrorContext(r.Context(), "handler panicked", "route", routePattern(r),
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				writeError(w, r, errInternal.withDetail("internal error"))
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// securityHeaders sets what every answer carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// limitHeaderSize answers 431 to a request whose line and headers are larger than max bytes, as
// every error is answered (net/http's own 431 is plain text, so its bound is set well above this).
func limitHeaderSize(max int, writeError func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if max <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if headerSize(r) > max {
				writeError(w, r, errHeadersTooLarge.withDetail("The request's line and headers are larger than "+
					strconv.Itoa(max)+" bytes."))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// headerSize is the size of the request line and headers as sent, give or take white space: what
// net/http's MaxHeaderBytes counts.
func headerSize(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + len("  \r\n\r\n")
	if r.Host != "" { // net/http moves Host out of the header
		n += len("Host: \r\n") + len(r.Host)
	}
	for name, values := range r.Header {
		for _, v := range values {
			n += len(name) + len(": \r\n") + len(v)
		}
	}
	return n
}

// httpMetrics counts requests and times them by route pattern (never the raw path), method and
// status. Every label comes from a closed set the server names (methodLabel: "other" for a method
// it does not know), never from what a client wrote: each value is a series kept for good.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
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
	reg.MustRegister(m.requests, m.duration)
	return m
}

// record counts one answered request and its latency.
func (m *httpMetrics) record(route, method string, status int, d time.Duration) {
	labels := prometheus.Labels{"route": route, "method": method, "status": strconv.Itoa(status)}
	m.requests.With(labels).Inc()
	m.duration.With(labels).Observe(d.Seconds())
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
