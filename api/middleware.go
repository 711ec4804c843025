package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"

	"pastebin/api/problem"
	"pastebin/api/request"
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
				logger.ErrorContext(r.Context(), "handler panicked", "route", request.RoutePattern(r),
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				writeError(w, r, problem.Internal.WithDetail("internal error"))
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
				writeError(w, r, problem.HeadersTooLarge.WithDetail("The request's line and headers are larger than "+
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
