package api

import (
	"net/http"

	"pastebin/api/problem"
	"pastebin/api/request"
)

// refuseUnknownMethods answers 501 to a method this server does not know (request.KnownMethod), before the router looks at
// it: no route serves it, whatever the path (RFC 9110, section 15.6.2).
func refuseUnknownMethods(writeError func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !request.KnownMethod(r.Method) {
				writeError(w, r, problem.MethodNotImplemented.WithDetail("This server does not implement the request's method."))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
