package api

import "net/http"

// knownMethods are the methods this server routes: those of RFC 9110 and PATCH (RFC 5789). A route
// that does not serve one of them answers 405 with the methods it does serve; any other method is
// answered 501 before routing (refuseUnknownMethods).
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodConnect: true, http.MethodOptions: true,
	http.MethodTrace: true,
}

// otherMethod is the metrics' and the access log's name for every method outside knownMethods.
const otherMethod = "other"

// methodLabel names r's method for the metrics and the access log: one of knownMethods, or "other".
// A client may send any token as a method, and each label value is a series kept for the life of
// the process: a label taken from the request would let anyone grow the metrics without bound.
func methodLabel(r *http.Request) string {
	if knownMethods[r.Method] {
		return r.Method
	}
	return otherMethod
}

// refuseUnknownMethods answers 501 to a method outside knownMethods, before the router looks at
// it: no route serves it, whatever the path (RFC 9110, section 15.6.2).
func refuseUnknownMethods(writeError func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !knownMethods[r.Method] {
				writeError(w, r, errMethodNotImplemented.withDetail("This server does not implement the request's method."))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
