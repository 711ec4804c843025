package api

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"time"
)

// requestIDHeader carries a request's id, in from a proxy or client and out in every answer.
const requestIDHeader = "X-Request-Id"

// maxRequestIDLength bounds an id taken from a request: it ends up in every log line.
const maxRequestIDLength = 64

type requestIDCtxKey struct{}

// RequestID returns the id of the request that ctx belongs to, or "" outside a request.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDCtxKey{}).(string)
	return id
}

// assignRequestIDs gives every request an id, answered in X-Request-Id and carried by every log
// line written with the request's context (LogHandler). An id that a proxy or client sent is kept,
// so one id follows the request through every hop, but only when it is short and plain: anything
// else could forge log fields or fill the logs, and is replaced.
func assignRequestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(requestIDHeader)
		if !plainRequestID(id) {
			id = rand.Text()
		}
		w.Header().Set(requestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDCtxKey{}, id)))
	})
}

func plainRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLength {
		return false
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
		if !ok {
			return false
		}
	}
	return true
}

// LogHandler wraps h so that every record logged with a request's context carries the request's
// id as request_id: each logger.XxxContext(r.Context(), ...) call gets it without passing it on.
// Wrapping twice adds nothing.
func LogHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(requestIDHandler); ok {
		return h
	}
	return requestIDHandler{h}
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, rec slog.Record) error {
	if id := RequestID(ctx); id != "" {
		rec.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// observeRequests writes one access log line per request (method, route pattern, status, duration,
// bytes written, the client's address) and records the request in the HTTP metrics: one wrapper and
// one clock for both. The method is methodLabel's, as the metrics have it. Never the raw path or
// query: a paste's code is what lets anyone read it, so logs name routes, not pastes. Probes and
// scrapes are logged at debug level, where their steady beat does not bury the requests of people.
func observeRequests(logger *slog.Logger, metrics *httpMetrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(sw, r)
			took, route := time.Since(start), routePattern(r)
			method := methodLabel(r)
			metrics.record(route, method, sw.status, took)
			level := slog.LevelInfo
			if route == "/healthz" || route == "/readyz" || route == "/metrics" {
				level = slog.LevelDebug
			}
			logger.LogAttrs(r.Context(), level, "request", slog.String("method", method), slog.String("route", route),
				slog.Int("status", sw.status), slog.Duration("duration", took),
				slog.Int64("bytes", sw.bytes), slog.String("client", clientAddr(r.Context())))
		})
	}
}
