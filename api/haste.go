package api

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"pastebin/api/problem"
	"pastebin/api/site"
	"pastebin/paste"
	"pastebin/store"
)

// haste-server's API, the one editor plugins, chat bots and command-line tools speak: POST
// /documents answers {"key": ...}, GET /documents/{key} answers {"key", "data"}, GET /raw/{key} the
// text. It is an adapter over the same create and read flows as every other route (limits, blocks,
// dedup, view limits and the rule of which pastes a GET reads included), with haste's shapes around
// them.

// hasteCreated is the answer to a haste create.
type hasteCreated struct {
	Key string `json:"key"`
}

// hasteDocument is the answer to a haste read.
type hasteDocument struct {
	Key  string `json:"key"`
	Data string `json:"data"`
}

// handleHasteCreate handles POST /documents: the raw body is the paste whatever its Content-Type
// (haste clients send text/plain, a form type, or none), so a browser's form post is not the page's
// create form here. Options are curl's query parameters and headers, a view limit included; an
// encrypted paste is refused, since haste's JSON carries text and ciphertext is bytes.
func handleHasteCreate(st *site.Site, creator *paste.Creator, maxBytes int64) http.Handler {
	return handlePasteCreate(st, creator, maxBytes, maxBytes, decodeHasteCreate, writeHasteCreated)
}

func decodeHasteCreate(r *http.Request, max int64) (paste.Input, error) {
	var in paste.Input
	if err := applyOptions(&in, queryAndHeaderOptions(r)); err != nil {
		return paste.Input{}, err
	}
	if in.Encryption != "" {
		return paste.Input{}, problem.BadRequest.WithDetail("haste's API carries text, and an encrypted paste is bytes: " +
			"create it with POST / and its Paste-Encryption header, as pastebin put --encrypt does (see docs/encryption.md).")
	}
	var err error
	if in.Content, in.Hash, err = readContent(r.Body, max); err != nil {
		return paste.Input{}, err
	}
	return in, in.Tidy()
}

// writeHasteCreated answers a haste create: 200 and the key, as haste-server does. The delete token
// is in its header alone, where haste clients, which know of none, leave it.
func writeHasteCreated(w http.ResponseWriter, _ *http.Request, _ site.PasteURLs, c paste.Created) {
	setCreatedHeaders(w.Header(), c)
	problem.WriteJSON(w, http.StatusOK, hasteCreated{Key: c.Paste.Code})
}

// handleHasteRead handles GET /documents/{key}: the paste's text in JSON. Like every GET it never
// has the content of a paste with a view limit, burn included (409, as raw answers). haste's data
// is a string: bytes that are not UTF-8 come out as U+FFFD, and /raw/{key} has them exactly.
func handleHasteRead(st *site.Site, rd *paste.Reader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := rd.Find(r.Context(), hasteCode(chi.URLParam(r, "key")))
		if err == nil && !paste.OpenToGet(f.Paste) {
			err = readWithPost(f.Paste, st.URLs(r, f.Paste.Code))
		}
		var data []byte
		if err == nil {
			data, err = rd.Bytes(r.Context(), f)
		}
		if err != nil {
			st.Error(w, r, err)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		problem.WriteJSON(w, http.StatusOK, hasteDocument{Key: f.Paste.Code, Data: string(data)})
	})
}

// hasteCode is the paste code of a haste key, which clients may follow with the extension of the
// paste's language (abc.js): haste-server reads the key up to its first dot.
func hasteCode(key string) string {
	code, _, _ := strings.Cut(key, ".")
	return code
}

// redirectExtension sends a GET of a paste's address followed by an extension (/{code}.js,
// /raw/{code}.py), the links haste clients print, to the paste's own address. Anything else goes on
// to next.
func redirectExtension(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := chi.URLParam(r, "code")
		code := hasteCode(key)
		if code == key || !store.ValidShortCode(code) || !strings.HasSuffix(r.URL.Path, "/"+key) {
			next.ServeHTTP(w, r)
			return
		}
		target := strings.TrimSuffix(r.URL.Path, key) + code
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, target, http.StatusMovedPermanently)
	})
}
