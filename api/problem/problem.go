// Package problem is how every error of the HTTP surface is told to its client: RFC 9457 problem
// details, one catalog of the problems the API answers (their names are part of the contract,
// openapi.yaml), and the one mapping from the errors of the flows and the store to them (From).
package problem

import (
	"net/http"
	"time"
)

// Problem is an error the client can act on, answered as RFC 9457 problem details. Its type is a
// stable relative URI, /problems/<Name>, documented at that address.
type Problem struct {
	Status int
	Name   string // the last segment of the type URI
	Title  string
	Detail string
	// RetryAfter, when set, is answered as Retry-After: when the client may try again.
	RetryAfter time.Duration
}

func (p *Problem) Error() string { return p.Name + ": " + p.Detail }

// Is makes every occurrence of a problem match its kind: errors.Is(err, Empty) holds for
// Empty.WithDetail(...) too.
func (p *Problem) Is(target error) bool {
	t, ok := target.(*Problem)
	return ok && t.Name == p.Name
}

// WithDetail returns a copy of p explaining this occurrence.
func (p *Problem) WithDetail(detail string) *Problem {
	q := *p
	q.Detail = detail
	return &q
}

// WithRetryAfter returns a copy of p that tells the client to try again after d.
func (p *Problem) WithRetryAfter(d time.Duration) *Problem {
	q := *p
	q.RetryAfter = d
	return &q
}

// The problems this API answers. Their names are part of the contract (openapi.yaml).
var (
	NotFound         = &Problem{Status: http.StatusNotFound, Name: "not-found", Title: "No such paste"}
	Gone             = &Problem{Status: http.StatusGone, Name: "gone", Title: "Paste expired or deleted"}
	BurnAfterReading = &Problem{Status: http.StatusConflict, Name: "burn-after-reading", Title: "Paste burns after reading"}
	ViewLimited      = &Problem{Status: http.StatusConflict, Name: "view-limited", Title: "Paste has a view limit"}
	Forbidden        = &Problem{Status: http.StatusForbidden, Name: "forbidden", Title: "Wrong delete token"}
	Unauthorized     = &Problem{Status: http.StatusUnauthorized, Name: "unauthorized", Title: "Missing or malformed token"}
	WrongAdminToken  = &Problem{Status: http.StatusUnauthorized, Name: "wrong-admin-token", Title: "Wrong admin token"}
	TooLarge         = &Problem{Status: http.StatusRequestEntityTooLarge, Name: "too-large", Title: "Paste too large"}
	Empty            = &Problem{Status: http.StatusBadRequest, Name: "empty-content", Title: "Paste is empty"}
	BadExpiry        = &Problem{Status: http.StatusBadRequest, Name: "invalid-expiry", Title: "Invalid expiry"}
	BadRequest       = &Problem{Status: http.StatusBadRequest, Name: "malformed-request", Title: "Malformed request"}
	BodyIncomplete   = &Problem{Status: http.StatusBadRequest, Name: "incomplete-body", Title: "Request body cut short"}
	BodyTimeout      = &Problem{Status: http.StatusRequestTimeout, Name: "body-timeout", Title: "Request body too slow"}
	MediaType        = &Problem{Status: http.StatusUnsupportedMediaType, Name: "unsupported-media-type", Title: "Unsupported content type"}
	BadIdempotency   = &Problem{Status: http.StatusBadRequest, Name: "invalid-idempotency-key", Title: "Invalid Idempotency-Key"}
	KeyReused        = &Problem{Status: http.StatusUnprocessableEntity, Name: "idempotency-key-reused", Title: "Idempotency-Key reused"}
	Storage          = &Problem{Status: http.StatusServiceUnavailable, Name: "storage-unavailable", Title: "Storage unavailable"}
	RouteNotFound    = &Problem{Status: http.StatusNotFound, Name: "route-not-found", Title: "No such route"}
	MethodNotAllowed = &Problem{Status: http.StatusMethodNotAllowed, Name: "method-not-allowed", Title: "Method not allowed"}
	// MethodNotImplemented answers a method that no route of the server serves.
	MethodNotImplemented = &Problem{Status: http.StatusNotImplemented, Name: "method-not-implemented", Title: "Method not implemented"}
	Internal             = &Problem{Status: http.StatusInternalServerError, Name: "internal", Title: "Internal error"}
	AdminDisabled        = &Problem{Status: http.StatusNotFound, Name: "admin-disabled", Title: "Admin API disabled"}
	CleanupDisabled      = &Problem{Status: http.StatusConflict, Name: "cleanup-disabled", Title: "Cleanup disabled here"}
	RunNotFound          = &Problem{Status: http.StatusNotFound, Name: "run-not-found", Title: "No such cleanup run"}
	RateLimited          = &Problem{Status: http.StatusTooManyRequests, Name: "rate-limited", Title: "Too many requests"}
	Busy                 = &Problem{Status: http.StatusServiceUnavailable, Name: "busy", Title: "Server busy"}
	// DeleteUnconfirmed: the delete committed but the cache could not be told (Retry-After).
	DeleteUnconfirmed = &Problem{Status: http.StatusServiceUnavailable, Name: "delete-unconfirmed", Title: "Delete not confirmed yet"}
	HeadersTooLarge   = &Problem{Status: http.StatusRequestHeaderFieldsTooLarge, Name: "headers-too-large", Title: "Request headers too large"}
	RangeUnsatisfied  = &Problem{Status: http.StatusRequestedRangeNotSatisfiable, Name: "range-not-satisfiable", Title: "Range not satisfiable"}
	// ClientGone answers a client that hung up while its request was served: nobody reads it, but
	// the access log and the metrics show nginx's 499 rather than an error of the server.
	ClientGone = &Problem{Status: 499, Name: "client-closed-request", Title: "Client closed the request"}
)

// The problems of takedowns, blocked content and the console.
var (
	TakenDown      = &Problem{Status: http.StatusGone, Name: "taken-down", Title: "Paste taken down"}
	LegalTakedown  = &Problem{Status: http.StatusUnavailableForLegalReasons, Name: "unavailable-for-legal-reasons", Title: "Unavailable for legal reasons"}
	ContentBlocked = &Problem{Status: http.StatusUnavailableForLegalReasons, Name: "content-blocked", Title: "Content blocked"}
	ContentUnknown = &Problem{Status: http.StatusConflict, Name: "content-unknown", Title: "Content no longer known"}
	// NotEditable answers edit as new (GET /?from=) of a paste whose text cannot fill the create form.
	NotEditable    = &Problem{Status: http.StatusConflict, Name: "not-editable", Title: "Paste cannot be edited as new"}
	SignInRequired = &Problem{Status: http.StatusUnauthorized, Name: "sign-in-required", Title: "Sign in first"}
	CrossSite      = &Problem{Status: http.StatusForbidden, Name: "cross-site-request", Title: "Cross-site request refused"}
	// CreatorKeyRequired answers a create without a valid creator key where one is needed
	// (PASTEBIN_CREATE_ACCESS=keys), or with an unknown or revoked one anywhere.
	CreatorKeyRequired = &Problem{Status: http.StatusUnauthorized, Name: "creator-key-required", Title: "Creator key required"}
	KeyNotFound        = &Problem{Status: http.StatusNotFound, Name: "key-not-found", Title: "No such creator key"}
)

// The problems of abuse reports.
var (
	ReportNotFound = &Problem{Status: http.StatusNotFound, Name: "report-not-found", Title: "No such report"}
	ReportTooLarge = &Problem{Status: http.StatusRequestEntityTooLarge, Name: "report-too-large", Title: "Report too large"}
)

// all lists every problem, for the /problems pages.
var all = []*Problem{
	NotFound, Gone, BurnAfterReading, ViewLimited, Forbidden, Unauthorized, WrongAdminToken, TooLarge, Empty, BadExpiry,
	BadRequest, BodyIncomplete, BodyTimeout, MediaType, BadIdempotency, KeyReused, Storage,
	RouteNotFound, MethodNotAllowed, Internal, AdminDisabled, CleanupDisabled, RunNotFound,
	RateLimited, Busy, DeleteUnconfirmed, HeadersTooLarge, MethodNotImplemented, RangeUnsatisfied,
	TakenDown, LegalTakedown, ContentBlocked, ContentUnknown, SignInRequired, CrossSite, NotEditable,
	ReportNotFound, ReportTooLarge,
	CreatorKeyRequired, KeyNotFound,
}
