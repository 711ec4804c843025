package request

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
)

// idHeader carries a request's id, in from a proxy or client and out in every answer.
const idHeader = "X-Request-Id"

// maxIDLength bounds an id taken from a request: it ends up in every log line.
const maxIDLength = 64

type idCtxKey struct{}

// ID returns the id of the request that ctx belongs to, or "" outside a request.
func ID(ctx context.Context) string {
	id, _ := ctx.Value(idCtxKey{}).(string)
	return id
}

// AssignIDs gives every request an id, answered in X-Request-Id and carried by every log line
// written with the request's context (LogHandler). An id that a proxy or client sent is kept, so
// one id follows the request through every hop, but only when it is short and plain: anything
// else could forge log fields or fill the logs, and is replaced.
func AssignIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(idHeader)
		if !plainID(id) {
			id = rand.Text()
		}
		w.Header().Set(idHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), idCtxKey{}, id)))
	})
}

func plainID(id string) bool {
	if id == "" || len(id) > maxIDLength {
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
	if _, ok := h.(idHandler); ok {
		return h
	}
	return idHandler{h}
}

type idHandler struct{ slog.Handler }

func (h idHandler) Handle(ctx context.Context, rec slog.Record) error {
	if id := ID(ctx); id != "" {
		rec.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h idHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return idHandler{h.Handler.WithAttrs(attrs)}
}

func (h idHandler) WithGroup(name string) slog.Handler {
	return idHandler{h.Handler.WithGroup(name)}
}
