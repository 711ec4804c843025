package api

import (
	"errors"
	"mime"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"pastebin/store"
)

// The form field that only the paste page's own button sends (templates/paste.html): a POST that
// carries it is answered with the page, every other POST with the bytes.
const (
	pageButtonField = "as"
	pageButtonValue = "page"
)

// refuseFunc answers 405 with an Allow header naming the other methods the path has.
type refuseFunc func(w http.ResponseWriter, r *http.Request, detail string)

// handlePasteConsume handles POST /{code} and POST /raw/{code}, the one way to read a paste that
// burns after reading, and POST /{code}/burn, where pages from before kept their button. asPage
// tells the page's button from curl -X POST: the button gets the page showing the content, every
// other POST exactly the bytes, whatever its Accept.
func handlePasteConsume(web *webUI, refuse refuseFunc, asPage func(http.ResponseWriter, *http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps := web.ps
		code := chi.URLParam(r, "code")
		if !store.ValidShortCode(code) { // /healthz and its like: no paste lives there to take
			refuse(w, r, r.Method+" is not allowed on "+r.URL.Path+".")
			return
		}
		page := asPage(w, r)
		p, data, err := ps.consume(r.Context(), code)
		switch {
		case errors.Is(err, errNothingToConsume) && page:
			http.Redirect(w, r, "/"+p.Code, http.StatusSeeOther) // any GET of its page shows it
		case errors.Is(err, errNothingToConsume):
			refuse(w, r, "This paste does not burn after reading: a POST has nothing to take. Read it with GET.")
		case err != nil:
			ps.writeError(w, r, err)
		case page:
			web.showConsumed(w, r, p, data)
		default:
			serveConsumed(w, r, p, data)
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

// serveConsumed answers the bytes of a paste that a POST took: nobody can fetch them again, so no
// cache may keep them either.
func serveConsumed(w http.ResponseWriter, r *http.Request, p store.Paste, data []byte) {
	setRawHeaders(w.Header(), r, p)
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Del("ETag")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// showConsumed shows a paste the page's button took. One the page cannot show (too large, not
// text) is downloaded instead, since after this nobody can fetch it again.
func (web *webUI) showConsumed(w http.ResponseWriter, r *http.Request, p store.Paste, data []byte) {
	v := web.newPasteView(r, p)
	v.Burned, v.RawAvailable, v.Deletable = true, false, false
	v.Content = web.renders.once(data, p.Language, p.Filename)
	if v.Content.Omitted != "" {
		w.Header().Set("Content-Disposition", attachment(p))
		serveConsumed(w, r, p, data)
		return
	}
	web.render(w, r, http.StatusOK, "paste", page{Title: v.PageTitle(), NoIndex: true, Data: v})
}

// readWithPost is the answer to a GET or HEAD of a paste that burns after reading: it says how to
// read it, and never holds its content.
func (ps *pasteService) readWithPost(r *http.Request, code string) error {
	u := ps.urls(r, code)
	return errBurnAfterReading.withDetail("This paste burns after reading, so no GET returns it. Read it once with a POST: " +
		"curl -X POST " + u.Page + " answers its bytes; in a browser, open " + u.Page + " and press its button.")
}
