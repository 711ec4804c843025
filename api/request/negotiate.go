package request

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// Negotiate picks the offer the client's Accept header prefers: the highest quality, the most
// specific match on ties, the earlier offer after that. With no Accept header, or nothing
// acceptable, it returns the first offer: a client that does not say what it wants gets the default.
func Negotiate(r *http.Request, offers ...string) string {
	accept := r.Header.Values("Accept")
	if len(accept) == 0 {
		return offers[0]
	}
	best, bestQ, bestSpec := offers[0], -1.0, -1
	for _, offer := range offers {
		q, spec := acceptQuality(accept, offer)
		if q > bestQ || (q == bestQ && spec > bestSpec) {
			best, bestQ, bestSpec = offer, q, spec
		}
	}
	if bestQ <= 0 {
		return offers[0]
	}
	return best
}

// acceptQuality returns the quality the Accept values give to offer, and how specific the matching
// range was (2 exact, 1 type/*, 0 */*, -1 no match).
func acceptQuality(accept []string, offer string) (float64, int) {
	offerType, _, _ := strings.Cut(offer, "/")
	q, spec := 0.0, -1
	for _, header := range accept {
		for _, part := range strings.Split(header, ",") {
			mediaRange, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			s := matchSpecificity(mediaRange, offer, offerType)
			if s <= spec {
				continue
			}
			spec, q = s, 1.0
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
		}
	}
	return q, spec
}

func matchSpecificity(mediaRange, offer, offerType string) int {
	switch {
	case mediaRange == offer:
		return 2
	case mediaRange == offerType+"/*":
		return 1
	case mediaRange == "*/*":
		return 0
	}
	return -1
}

// WantsJSON reports whether the client prefers JSON to plain text.
func WantsJSON(r *http.Request) bool {
	return Negotiate(r, "text/plain", "application/json") == "application/json"
}

// WantsHTML reports whether the client is a browser asking for a page.
func WantsHTML(r *http.Request) bool {
	return Negotiate(r, "text/plain", "text/html") == "text/html"
}

// VaryAccept adds Accept to the Vary header of an answer chosen by it, once.
func VaryAccept(h http.Header) {
	for _, v := range h.Values("Vary") {
		for _, name := range strings.Split(v, ",") {
			if n := strings.TrimSpace(name); n == "*" || strings.EqualFold(n, "Accept") {
				return
			}
		}
	}
	h.Add("Vary", "Accept")
}
