package api

import (
	"net/http"
	"time"

	"pastebin/api/problem"
	"pastebin/api/request"
	"pastebin/api/site"
	"pastebin/paste"
)

// The creates of curl, of the JSON API and of haste clients (haste.go; the page's form is
// web.HandleCreate): each decodes its request (decode.go) and runs paste.Creator.

// handlePasteCreateCurl handles POST / and PUT /{name}: raw or multipart bodies from curl.
// The answer is the paste's URL and its delete token on two lines, or JSON if the client asks.
func handlePasteCreateCurl(st *site.Site, creator *paste.Creator, maxBytes int64) http.Handler {
	return handlePasteCreate(st, creator, maxBytes, maxBytes+multipartOverhead, decodeCurlCreate, writeCreated)
}

// handlePasteCreateJSON handles POST /api/v1/pastes. JSON escapes text, so the body may be bigger
// than the paste it carries.
func handlePasteCreateJSON(st *site.Site, creator *paste.Creator, maxBytes int64) http.Handler {
	return handlePasteCreate(st, creator, maxBytes, 2*maxBytes+multipartOverhead, decodeJSONCreate, writeCreated)
}

// handlePasteCreate creates the paste that decode reads from a body of at most bodyBytes, whose
// content may hold at most maxBytes, and has answer tell the client.
func handlePasteCreate(st *site.Site, creator *paste.Creator, maxBytes, bodyBytes int64,
	decode func(*http.Request, int64) (paste.Input, error), answer createdWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := limitBody(w, r, maxBytes, bodyBytes); err != nil {
			st.Error(w, r, err)
			return
		}
		in, err := decode(r, maxBytes)
		in.CreatorKey, _ = request.CreatorKey(r)
		var idem paste.IdempotencyKey
		if err == nil {
			idem, err = readIdempotencyKey(r)
		}
		var c paste.Created
		if err == nil {
			in.Client = request.ClientKey(r.Context()) // for the spam signal
			c, err = creator.Create(r.Context(), in, idem)
		}
		if err != nil {
			st.Error(w, r, err)
			return
		}
		answer(w, r, st.URLs(r, c.Paste.Code), c)
	})
}

// createdWriter answers a create that succeeded.
type createdWriter func(w http.ResponseWriter, r *http.Request, u site.PasteURLs, c paste.Created)

// writeCreated answers a create: 201, the page URL in Location, the token in a header, and a body in
// the format the client asked for. Every create answers the same shape, whether or not the content
// was stored before (dedup must not show).
func writeCreated(w http.ResponseWriter, r *http.Request, u site.PasteURLs, c paste.Created) {
	h := w.Header()
	h.Set("Location", u.Page)
	setCreatedHeaders(h, c)
	if r.URL.Path != "/api/v1/pastes" {
		request.VaryAccept(h) // text or JSON, by Accept
	}
	if r.URL.Path == "/api/v1/pastes" || request.WantsJSON(r) {
		body := newPasteJSON(c.Paste, u)
		body.DeleteToken = c.Token
		body.DeleteURL = u.API
		problem.WriteJSON(w, http.StatusCreated, body)
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(u.Page + "\n" + c.Token + "\n"))
}

// setCreatedHeaders are the headers of every create's answer: the delete token, shown this once and
// so never cached, the expiry, and whether an Idempotency-Key replayed it.
func setCreatedHeaders(h http.Header, c paste.Created) {
	h.Set("Paste-Delete-Token", c.Token)
	h.Set("Cache-Control", "no-store")
	setExpiresHeader(h, c.Paste.ExpiresAt)
	if c.Replayed {
		h.Set("Idempotent-Replayed", "true")
	}
}

func setExpiresHeader(h http.Header, expires time.Time) {
	if !expires.IsZero() {
		h.Set("Paste-Expires-At", expires.UTC().Format(time.RFC3339))
	}
}
