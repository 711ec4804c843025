package request

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// knownMethods are the methods this server routes: those of RFC 9110 and PATCH (RFC 5789). A route
// that does not serve one of them answers 405 with the methods it does serve; any other method is
// answered 501 before routing.
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodConnect: true, http.MethodOptions: true,
	http.MethodTrace: true,
}

// otherMethod is the metrics' and the access log's name for every method outside knownMethods.
const otherMethod = "other"

// KnownMethod reports whether method is one this server routes.
func KnownMethod(method string) bool { return knownMethods[method] }

// MethodLabel names r's method for the metrics and the logs: one of the known methods, or "other".
// A client may send any token as a method, and each label value is a series kept for the life of
// the process: a label taken from the request would let anyone grow the metrics without bound.
func MethodLabel(r *http.Request) string {
	if knownMethods[r.Method] {
		return r.Method
	}
	return otherMethod
}

// RoutePattern names the route r matched, for the metrics and the logs: its pattern, never the raw
// path (a paste's code is what lets anyone read it), or "unmatched".
func RoutePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		return rc.RoutePattern()
	}
	return "unmatched"
}
