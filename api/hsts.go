package api

import (
	"net/http"
	"strconv"
	"time"

	"pastebin/api/request"
)

// strictTransport tells browsers that came over HTTPS (to this server, or to a trusted proxy that
// said so) to come only over HTTPS for maxAge: a later visit typed as http:// is then never sent in
// the clear, where anyone on the way could read or change it. Never over plain HTTP, where the
// header means nothing to a browser and would only lock out a site not yet on HTTPS. maxAge 0: off.
func strictTransport(maxAge time.Duration) func(http.Handler) http.Handler {
	value := "max-age=" + strconv.FormatInt(int64(maxAge/time.Second), 10)
	return func(next http.Handler) http.Handler {
		if maxAge <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if request.ViaHTTPS(r) {
				w.Header().Set("Strict-Transport-Security", value)
			}
			next.ServeHTTP(w, r)
		})
	}
}
