package api

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"pastebin/paste"
)

// multipartOverhead is room for boundaries and option fields around a paste of the maximum size.
const multipartOverhead = 64 << 10

// handlePasteCreateCurl handles POST / and PUT /{name}: raw or multipart bodies from curl.
// The answer is the paste's URL and its delete token on two lines, or JSON if the client asks.
func handlePasteCreateCurl(ps *pasteService) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := ps.cfg.MaxPasteBytes
		if err := limitBody(w, r, limit, limit+multipartOverhead); err != nil {
			ps.writeError(w, r, err)
			return
		}
		in, err := decodeCurlCreate(r, limit)
		if err != nil {
			ps.writeError(w, r, err)
			return
		}
		ps.createAndAnswer(w, r, in)
	})
}

// handlePasteCreateJSON handles POST /api/v1/pastes.
func handlePasteCreateJSON(ps *pasteService) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// JSON escapes text, so the body may be bigger than the paste it carries.
		if err := limitBody(w, r, ps.cfg.MaxPasteBytes, 2*ps.cfg.MaxPasteBytes+multipartOverhead); err != nil {
			ps.writeError(w, r, err)
			return
		}
		in, err := decodeJSONCreate(r, ps.cfg.MaxPasteBytes)
		if err != nil {
			ps.writeError(w, r, err)
			return
		}
		ps.createAndAnswer(w, r, in)
	})
}

// limitBody refuses a body declared larger than bodyLimit before reading any of it, and cuts one
// that turns out larger while it is read; either way the client is told the paste limit. A body
// that fails to arrive in full is marked as the client's fault (bodyError).
func limitBody(w http.ResponseWriter, r *http.Request, pasteLimit, bodyLimit int64) error {
	if r.ContentLength > bodyLimit {
		return &http.MaxBytesError{Limit: pasteLimit}
	}
	r.Body = clientBody{http.MaxBytesReader(w, r.Body, bodyLimit)}
	return nil
}

// bodyError is a request body that did not arrive: cut short (the client hung up, or sent less
// than it declared) or too slow (the server's read timeout). Either way it is the client's doing.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "request body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// timeout reports whether the body stopped at the server's read timeout.
func (e *bodyError) timeout() bool {
	var ne net.Error
	return errors.As(e.err, &ne) && ne.Timeout()
}

// clientBody marks the errors of reading a request body, but its end and its size bound, as bodyError.
type clientBody struct{ io.ReadCloser }

func (b clientBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && !isTooBig(err) {
		err = &bodyError{err}
	}
	return n, err
}

// isBodyFault reports whether err is the body's own failure, too big or cut short, which keeps
// its problem rather than being called malformed.
func isBodyFault(err error) bool {
	var cut *bodyError
	return isTooBig(err) || errors.As(err, &cut)
}

func (ps *pasteService) createAndAnswer(w http.ResponseWriter, r *http.Request, in paste.Input) {
	idem, err := readIdempotencyKey(r)
	if err != nil {
		ps.writeError(w, r, err)
		return
	}
	c, err := ps.creator.Create(r.Context(), in, idem)
	if err != nil {
		ps.writeError(w, r, err)
		return
	}
	writeCreated(w, r, ps.urls(r, c.Paste.Code), c)
}

// writeCreated answers a create: 201, the page URL in Location, the token in a header, and a body in
// the format the client asked for. Every create answers the same shape, whether or not the content
// was stored before (dedup must not show).
func writeCreated(w http.ResponseWriter, r *http.Request, u pasteURLs, c paste.Created) {
	h := w.Header()
	h.Set("Location", u.Page)
	h.Set("Paste-Delete-Token", c.Token)
	h.Set("Cache-Control", "no-store")
	setExpiresHeader(h, c.Paste.ExpiresAt)
	if c.Replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	if r.URL.Path != "/api/v1/pastes" {
		varyAccept(h) // text or JSON, by Accept
	}
	if r.URL.Path == "/api/v1/pastes" || wantsJSON(r) {
		body := newPasteJSON(c.Paste, u)
		body.DeleteToken = c.Token
		body.DeleteURL = u.API
		writeJSON(w, http.StatusCreated, body)
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(u.Page + "\n" + c.Token + "\n"))
}

func setExpiresHeader(h http.Header, expires time.Time) {
	if !expires.IsZero() {
		h.Set("Paste-Expires-At", expires.UTC().Format(time.RFC3339))
	}
}

// pasteURLs are the addresses of one paste.
type pasteURLs struct {
	Page string // GET: the text to curl, the page to browsers
	Raw  string
	API  string // metadata and DELETE
}

// urls builds a paste's addresses on the configured base URL, or else on the one the request came to.
func (ps *pasteService) urls(r *http.Request, code string) pasteURLs {
	base := strings.TrimSuffix(ps.cfg.BaseURL, "/")
	if base == "" {
		scheme := "http"
		if viaHTTPS(r) {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return pasteURLs{Page: base + "/" + code, Raw: base + "/raw/" + code, API: base + "/api/v1/pastes/" + code}
}
