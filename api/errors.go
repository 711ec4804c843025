package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"pastebin/store"
)

// problem is an error the client can act on, answered as RFC 9457 problem details. Its type is a
// stable relative URI, /problems/<name>, documented at that address.
type problem struct {
	status int
	name   string // the last segment of the type URI
	title  string
	detail string
	// retryAfter, when set, is answered as Retry-After: when the client may try again.
	retryAfter time.Duration
}

func (p *problem) Error() string { return p.name + ": " + p.detail }

// Is makes every occurrence of a problem match its kind: errors.Is(err, errEmpty) holds for
// errEmpty.withDetail(...) too.
func (p *problem) Is(target error) bool {
	t, ok := target.(*problem)
	return ok && t.name == p.name
}

// withDetail returns a copy of p explaining this occurrence.
func (p *problem) withDetail(detail string) *problem {
	q := *p
	q.detail = detail
	return &q
}

// withRetryAfter returns a copy of p that tells the client to try again after d.
func (p *problem) withRetryAfter(d time.Duration) *problem {
	q := *p
	q.retryAfter = d
	return &q
}

// The problems this API answers. Their names are part of the contract (openapi.yaml).
var (
	errNotFound         = &problem{status: http.StatusNotFound, name: "not-found", title: "No such paste"}
	errGone             = &problem{status: http.StatusGone, name: "gone", title: "Paste expired or deleted"}
	errBurnAfterReading = &problem{status: http.StatusConflict, name: "burn-after-reading", title: "Paste burns after reading"}
	errForbidden        = &problem{status: http.StatusForbidden, name: "forbidden", title: "Wrong delete token"}
	errUnauthorized     = &problem{status: http.StatusUnauthorized, name: "unauthorized", title: "Missing or malformed token"}
	errWrongAdminToken  = &problem{status: http.StatusUnauthorized, name: "wrong-admin-token", title: "Wrong admin token"}
	errTooLarge         = &problem{status: http.StatusRequestEntityTooLarge, name: "too-large", title: "Paste too large"}
	errEmpty            = &problem{status: http.StatusBadRequest, name: "empty-content", title: "Paste is empty"}
	errBadExpiry        = &problem{status: http.StatusBadRequest, name: "invalid-expiry", title: "Invalid expiry"}
	errBadRequest       = &problem{status: http.StatusBadRequest, name: "malformed-request", title: "Malformed request"}
	errBodyIncomplete   = &problem{status: http.StatusBadRequest, name: "incomplete-body", title: "Request body cut short"}
	errBodyTimeout      = &problem{status: http.StatusRequestTimeout, name: "body-timeout", title: "Request body too slow"}
	errMediaType        = &problem{status: http.StatusUnsupportedMediaType, name: "unsupported-media-type", title: "Unsupported content type"}
	errBadIdempotency   = &problem{status: http.StatusBadRequest, name: "invalid-idempotency-key", title: "Invalid Idempotency-Key"}
	errKeyReused        = &problem{status: http.StatusUnprocessableEntity, name: "idempotency-key-reused", title: "Idempotency-Key reused"}
	errStorage          = &problem{status: http.StatusServiceUnavailable, name: "storage-unavailable", title: "Storage unavailable"}
	errRouteNotFound    = &problem{status: http.StatusNotFound, name: "route-not-found", title: "No such route"}
	errMethodNotAllowed = &problem{status: http.StatusMethodNotAllowed, name: "method-not-allowed", title: "Method not allowed"}
	// errMethodNotImplemented answers a method that no route of the server serves (knownMethods).
	errMethodNotImplemented = &problem{status: http.StatusNotImplemented, name: "method-not-implemented", title: "Method not implemented"}
	errInternal             = &problem{status: http.StatusInternalServerError, name: "internal", title: "Internal error"}
	errAdminDisabled        = &problem{status: http.StatusNotFound, name: "admin-disabled", title: "Admin API disabled"}
	errCleanupDisabled      = &problem{status: http.StatusConflict, name: "cleanup-disabled", title: "Cleanup disabled here"}
	errRunNotFound          = &problem{status: http.StatusNotFound, name: "run-not-found", title: "No such cleanup run"}
	errRateLimited          = &problem{status: http.StatusTooManyRequests, name: "rate-limited", title: "Too many requests"}
	errBusy                 = &problem{status: http.StatusServiceUnavailable, name: "busy", title: "Server busy"}
	// errDeleteUnconfirmed: the delete committed but the cache could not be told (Retry-After).
	errDeleteUnconfirmed = &problem{status: http.StatusServiceUnavailable, name: "delete-unconfirmed", title: "Delete not confirmed yet"}
	errHeadersTooLarge   = &problem{status: http.StatusRequestHeaderFieldsTooLarge, name: "headers-too-large", title: "Request headers too large"}
	// errClientGone answers a client that hung up while its request was served: nobody reads it,
	// but the access log and the metrics show nginx's 499 rather than an error of the server.
	errClientGone = &problem{status: 499, name: "client-closed-request", title: "Client closed the request"}
)

// problems lists every problem by name, for the /problems pages.
var problems = []*problem{
	errNotFound, errGone, errBurnAfterReading, errForbidden, errUnauthorized, errWrongAdminToken, errTooLarge, errEmpty, errBadExpiry,
	errBadRequest, errBodyIncomplete, errBodyTimeout, errMediaType, errBadIdempotency, errKeyReused, errStorage,
	errRouteNotFound, errMethodNotAllowed, errInternal, errAdminDisabled, errCleanupDisabled, errRunNotFound,
	errRateLimited, errBusy, errDeleteUnconfirmed, errHeadersTooLarge, errMethodNotImplemented,
}

// asProblem maps any error to the problem the client sees. Errors it does not know are internal:
// logged once here with the route, shown to the client as "internal error" and nothing more.
func asProblem(r *http.Request, logger *slog.Logger, err error) *problem {
	var p *problem
	var tooBig *http.MaxBytesError
	var gone *store.GoneError
	var cut *bodyError
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &gone):
		return goneProblem(gone.Reason)
	case errors.Is(err, store.ErrBlocked):
		return blockedProblem
	case errors.Is(err, store.ErrContentUnknown):
		return contentUnknownProblem
	case errors.Is(err, store.ErrGone):
		return errGone.withDetail("This paste has expired or was deleted.")
	case errors.Is(err, store.ErrNotFound):
		return errNotFound.withDetail("There is no paste with this code.")
	case errors.Is(err, store.ErrForbidden):
		return errForbidden.withDetail("The token does not match this paste's delete token.")
	case errors.As(err, &tooBig):
		return errTooLarge.withDetail("The paste is larger than " + strconv.FormatInt(tooBig.Limit, 10) + " bytes.")
	case errors.As(err, &cut):
		logger.WarnContext(r.Context(), "request body cut short", "route", routePattern(r), "err", cut.err)
		if cut.timeout() {
			return errBodyTimeout.withDetail("The request body did not arrive in time; nothing was saved.")
		}
		return errBodyIncomplete.withDetail("The request body ended before it was complete; nothing was saved.")
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		logger.WarnContext(r.Context(), "client went away", "route", routePattern(r), "err", err)
		return errClientGone.withDetail("The connection closed before the answer.")
	case errors.Is(err, errBlobUnavailable):
		logger.WarnContext(r.Context(), "blob store unavailable", "route", routePattern(r), "err", err)
		return errStorage.withDetail("The paste store is unreachable; nothing was saved. Try again shortly.")
	}
	logger.ErrorContext(r.Context(), "internal error", "route", routePattern(r), "method", methodLabel(r), "err", err)
	return errInternal.withDetail("internal error")
}

func goneDetail(reason string) string {
	switch reason {
	case store.ReasonOwner:
		return "This paste was deleted by its owner."
	case store.ReasonBurned:
		return "This paste was burned after reading."
	default:
		return "This paste has expired."
	}
}

// errBlobUnavailable wraps failures of S3 writes and reads, which clients see as 503.
var errBlobUnavailable = errors.New("blob store unavailable")

// problemBody is the RFC 9457 JSON shape.
type problemBody struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	// RequestID names the request in the server's logs, for a support request.
	RequestID string `json:"request_id,omitempty"`
}

// writeProblem answers p as application/problem+json. A HEAD gets the headers GET would, the
// body's Content-Length included, and no body (RFC 9110, section 9.3.2).
func writeProblem(w http.ResponseWriter, r *http.Request, p *problem) {
	h := w.Header()
	switch {
	case errors.Is(p, errWrongAdminToken):
		h.Set("WWW-Authenticate", `Bearer realm="pastebin", error="invalid_token"`) // RFC 6750, section 3.1
	case p.status == http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="pastebin"`)
	}
	var body bytes.Buffer
	encodeJSON(&body, problemBody{
		Type: "/problems/" + p.name, Title: p.title, Status: p.status, Detail: p.detail, Instance: r.URL.Path,
		RequestID: RequestID(r.Context()),
	})
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Robots-Tag", "noindex")
	h.Set("Content-Length", strconv.Itoa(body.Len()))
	h.Set("Cache-Control", "no-store")
	h.Del("ETag")
	h.Del("Content-Disposition")
	setRetryAfter(h, p.retryAfter)
	w.WriteHeader(p.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body.Bytes())
	}
}

func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		return rc.RoutePattern()
	}
	return "unmatched"
}

// handleProblemTypes lists every problem type: the documentation its type URIs point at.
func handleProblemTypes() http.Handler {
	sorted := append(append([]*problem(nil), problems...), adminProblems...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "name")
		type entry struct {
			Type   string `json:"type"`
			Title  string `json:"title"`
			Status int    `json:"status"`
		}
		var out []entry
		for _, p := range sorted {
			if name == "" || name == p.name {
				out = append(out, entry{"/problems/" + p.name, p.title, p.status})
			}
		}
		if len(out) == 0 {
			writeProblem(w, r, errRouteNotFound.withDetail("No such problem type."))
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// writeJSON answers v as JSON, which is for programs, not for search indexes.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Robots-Tag", "noindex")
	w.WriteHeader(status)
	encodeJSON(w, v)
}

// encodeJSON writes v as JSON that is never read as HTML, so "<", ">" and "&" stay as they are
// rather than \u003c and the like.
func encodeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
