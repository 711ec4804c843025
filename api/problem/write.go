package problem

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"pastebin/api/request"
)

// body is the RFC 9457 JSON shape.
type body struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	// RequestID names the request in the server's logs, for a support request.
	RequestID string `json:"request_id,omitempty"`
}

// Write answers p as application/problem+json. A HEAD gets the headers GET would, the body's
// Content-Length included, and no body (RFC 9110, section 9.3.2).
func Write(w http.ResponseWriter, r *http.Request, p *Problem) {
	h := w.Header()
	switch {
	case errors.Is(p, WrongAdminToken):
		h.Set("WWW-Authenticate", `Bearer realm="pastebin", error="invalid_token"`) // RFC 6750, section 3.1
	case p.Status == http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="pastebin"`)
	}
	var buf bytes.Buffer
	encodeJSON(&buf, body{
		Type: "/problems/" + p.Name, Title: p.Title, Status: p.Status, Detail: p.Detail, Instance: r.URL.Path,
		RequestID: request.ID(r.Context()),
	})
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Robots-Tag", "noindex")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-store")
	h.Del("ETag")
	h.Del("Content-Disposition")
	SetRetryAfter(h, p.RetryAfter)
	w.WriteHeader(p.Status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// SetRetryAfter tells the client, in whole seconds, when to try again.
func SetRetryAfter(h http.Header, d time.Duration) {
	if d > 0 {
		h.Set("Retry-After", strconv.Itoa(RetrySeconds(d)))
	}
}

// RetrySeconds is d in the whole seconds Retry-After counts, rounded up.
func RetrySeconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// HandleTypes handles GET /problems and /problems/{name}: every problem type, the documentation
// its type URIs point at.
func HandleTypes() http.Handler {
	sorted := append([]*Problem(nil), all...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "name")
		type entry struct {
			Type   string `json:"type"`
			Title  string `json:"title"`
			Status int    `json:"status"`
		}
		var out []entry
		for _, p := range sorted {
			if name == "" || name == p.Name {
				out = append(out, entry{"/problems/" + p.Name, p.Title, p.Status})
			}
		}
		if len(out) == 0 {
			Write(w, r, RouteNotFound.WithDetail("No such problem type."))
			return
		}
		WriteJSON(w, http.StatusOK, out)
	})
}

// WriteJSON answers v as JSON, which is for programs, not for search indexes.
func WriteJSON(w http.ResponseWriter, status int, v any) {
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
