package api

import (
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"pastebin/api/problem"
	"pastebin/api/representation"
	"pastebin/api/site"
	"pastebin/api/web"
	"pastebin/paste"
	"pastebin/store"
)

// The form field that only the paste page's own button sends (api/web/templates/paste.html): a
// POST that carries it is answered with the page, every other POST with the bytes.
const (
	pageButtonField = "as"
	pageButtonValue = "page"
)

// handlePasteConsume handles POST /{code} and POST /raw/{code}, the one way to read a paste with a
// view limit (burn after reading is one view), and POST /{code}/burn, where pages from before kept
// their button. asPage
// tells the page's button from curl -X POST: the button gets the page showing the content, every
// other POST exactly the bytes, whatever its Accept.
func handlePasteConsume(st *site.Site, pages *web.Pages, consumer *paste.Consumer, reps *representation.Server,
	logger *slog.Logger, refuse refuseFunc, asPage func(http.ResponseWriter, *http.Request) bool) http.Handler {
	serve := func(w http.ResponseWriter, r *http.Request, c paste.Consumed) {
		serveConsumed(w, r, reps, c, func(err error) { answerServeError(w, r, st, logger, c.Paste, err) })
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := chi.URLParam(r, "code")
		if !store.ValidShortCode(code) { // /healthz and its like: no paste lives there to take
			refuse(w, r, r.Method+" is not allowed on "+r.URL.Path+".")
			return
		}
		page := asPage(w, r)
		var c paste.Consumed
		var err error
		if page {
			c, err = consumer.ConsumeForPage(r.Context(), code)
		} else {
			c, err = consumer.Consume(r.Context(), code)
		}
		switch {
		case (errors.Is(err, paste.ErrNothingToConsume) || errors.Is(err, paste.ErrEncrypted)) && page:
			// Any GET of its page shows it; an encrypted paste's page takes its view with its script.
			http.Redirect(w, r, "/"+c.Paste.Code, http.StatusSeeOther)
		case errors.Is(err, paste.ErrNothingToConsume):
			refuse(w, r, "This paste has no view limit: a POST has nothing to take. Read it with GET.")
		case err != nil:
			st.Error(w, r, err)
		case page:
			if !pages.ShowConsumed(w, r, c) { // one the page cannot show (too large, not text) is downloaded
				w.Header().Set("Content-Disposition", attachment(c.Paste))
				serve(w, r, c)
			}
		default:
			serve(w, r, c)
		}
	})
}

// fromPageButton reports whether a POST comes from the paste page's button. curl -X POST sends no
// form, and curl -d a form without the button's field.
func fromPageButton(w http.ResponseWriter, r *http.Request) bool {
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType != "application/x-www-form-urlencoded" {
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFieldBytes)
	return r.PostFormValue(pageButtonField) == pageButtonValue
}

// alwaysPage answers every POST /{code}/burn with the page: the button of pages served before the
// paste's own URL took POSTs sends no field.
func alwaysPage(http.ResponseWriter, *http.Request) bool { return true }

// serveConsumed answers the bytes of a view a POST took, in the coding Accept-Encoding takes, with
// the views left, and hands what went wrong to answer: nobody can fetch them again through this
// view, so no cache may keep them either, and no form of them is kept (the Content has no Key).
func serveConsumed(w http.ResponseWriter, r *http.Request, reps *representation.Server, c paste.Consumed, answer func(error)) {
	setRawHeaders(w.Header(), r, c.Paste)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Paste-Views-Left", strconv.Itoa(c.Paste.ViewsLeft))
	sc, err := storedContent(c.Paste, c.Stored, nil)
	if err == nil {
		err = reps.Serve(w, r, sc)
	}
	answer(err)
}

// readWithPost is the answer to a GET or HEAD of a paste that only a POST reads (paste.OpenToGet):
// it says how to read it, and never holds its content.
func readWithPost(p store.Paste, u site.PasteURLs) error {
	return problem.ReadByPost(p, "curl -X POST "+u.Page+" answers its bytes; in a browser, open "+u.Page+" and press its button.")
}
