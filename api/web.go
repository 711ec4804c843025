package api

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"pastebin/store"
)

// either sends requests for which is holds to yes and the others to no: one address serves curl its
// text and a person the page (wantsHTML), or takes the browser's create form (isWebForm).
func either(is func(*http.Request) bool, yes, no http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if is(r) {
			yes.ServeHTTP(w, r)
			return
		}
		no.ServeHTTP(w, r)
	})
}

// byAccept serves a browser asking for HTML the page and every other client the text. The answer
// names Accept in Vary, so that a shared cache never hands one of them the other's answer.
func byAccept(page, text http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		varyAccept(w.Header())
		either(wantsHTML, page, text).ServeHTTP(w, r)
	})
}

// handleWebIndex handles GET / for browsers: the create form.
func handleWebIndex(web *webUI) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The form changes only with the binary; revalidating keeps the back button fast.
		w.Header().Set("Cache-Control", "no-cache")
		web.renderForm(w, r, http.StatusOK, formValues{}, "")
	})
}

// pasteView is what the paste page shows. Exactly one of Interstitial, Content.Omitted and the
// highlighted Content is what fills the page's body.
type pasteView struct {
	Code, URL               string
	Title, Filename         string
	Size                    string
	Expires                 time.Time // zero: never
	ExpiresIn               string
	BurnAfterRead           bool
	Interstitial            bool   // a burn-after-reading paste not yet opened
	Burned                  bool   // this page holds the only copy left
	Token                   string // the delete token, shown once after a browser create
	Content                 rendered
	RawAvailable, Deletable bool
}

func (web *webUI) newPasteView(r *http.Request, p store.Paste) pasteView {
	u := web.ps.urls(r, p.Code)
	v := pasteView{
		Code: p.Code, URL: u.Page, Title: p.Title, Filename: p.Filename,
		Size: humanBytes(p.Size), BurnAfterRead: p.BurnAfterRead,
		RawAvailable: true, Deletable: true,
	}
	if !p.ExpiresAt.IsZero() {
		v.Expires, v.ExpiresIn = p.ExpiresAt.UTC(), relativeTime(web.ps.now(), p.ExpiresAt)
	}
	return v
}

// handleWebPaste handles GET /{code} for browsers: the paste highlighted, or, for a paste that
// burns after reading, a page asking the reader to confirm. A GET never burns anything, so link
// previews and crawlers cannot take a paste meant for a person.
func handleWebPaste(web *webUI) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps := web.ps
		code := chi.URLParam(r, "code")
		f, err := ps.find(r.Context(), code) // 404 and 410 exactly as the raw route (invariants 4, 5)
		if err != nil {
			ps.writeError(w, r, err)
			return
		}
		v := web.newPasteView(r, f.paste)
		if f.paste.BurnAfterRead {
			v.Interstitial, v.RawAvailable = true, false
		} else if v.Content, err = web.content(r, f); err != nil {
			ps.writeError(w, r, err)
			return
		}
		v.Token = takeTokenCookie(w, r, code)
		web.render(w, r, http.StatusOK, "paste", page{Title: v.PageTitle(), NoIndex: true, Data: v})
	})
}

// content reads and renders a paste that does not burn; a paste too big to show is not even read.
func (web *webUI) content(r *http.Request, f found) (rendered, error) {
	if f.paste.Size > maxShownBytes {
		return tooLargeToShow, nil
	}
	body, err := web.ps.body(r.Context(), f)
	if err != nil {
		return rendered{}, err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return rendered{}, fmt.Errorf("%w: %w", errBlobUnavailable, err)
	}
	return web.renders.page(f.paste, data), nil
}

// handleWebDelete handles POST /{code}/delete, the delete form of pages without JavaScript. The
// token comes only from what the person typed into the form: never from a cookie or anything
// else the browser would send by itself, so no other site can make a browser delete a paste.
func handleWebDelete(web *webUI) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps := web.ps
		r.Body = http.MaxBytesReader(w, r.Body, maxFieldBytes)
		token := strings.TrimSpace(r.PostFormValue("token"))
		if len(token) != tokenLength {
			ps.writeError(w, r, errBadRequest.withDetail("Enter the delete token you were given when the paste was created."))
			return
		}
		code := chi.URLParam(r, "code")
		if err := ps.delete(r.Context(), code, token); err != nil {
			ps.writeError(w, r, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, "/"+code, http.StatusSeeOther) // its page now answers 410
	})
}

// tokenCookie carries the delete token from a browser create to the paste's page, which shows it
// once. It never goes in a URL, where Referer headers and logs would keep it.
const tokenCookie = "paste_token"

// setTokenCookie hands the token to the next request for this paste's page only: scoped to its
// path, unreadable by scripts, never sent from other sites, and gone within minutes.
func (web *webUI) setTokenCookie(w http.ResponseWriter, r *http.Request, code, token string) {
	http.SetCookie(w, &http.Cookie{
		Name: tokenCookie, Value: token, Path: "/" + code, MaxAge: 300, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: web.secure(r),
	})
}

// takeTokenCookie reads the token cookie and clears it, so the token is shown only once.
func takeTokenCookie(w http.ResponseWriter, r *http.Request, code string) string {
	c, err := r.Cookie(tokenCookie)
	if err != nil {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Path: "/" + code, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	if len(c.Value) != tokenLength {
		return ""
	}
	return c.Value
}

func (web *webUI) secure(r *http.Request) bool {
	return viaHTTPS(r) || strings.HasPrefix(web.ps.cfg.BaseURL, "https://")
}

// PageTitle is the paste's title, else its file name, else its code.
func (v pasteView) PageTitle() string {
	if v.Title != "" {
		return v.Title
	}
	if v.Filename != "" {
		return v.Filename
	}
	return "Paste " + v.Code
}

// ExpiresISO is the expiry for machines (the time element, the page's script); "" for never.
func (v pasteView) ExpiresISO() string {
	if v.Expires.IsZero() {
		return ""
	}
	return v.Expires.Format(time.RFC3339)
}

// ExpiresTitle is the exact expiry for people, shown on hover.
func (v pasteView) ExpiresTitle() string { return v.Expires.Format("2 Jan 2006, 15:04 MST") }

// Lines is the number of lines, in words.
func (v pasteView) Lines() string { return plural(int64(v.Content.Lines), "line") }
