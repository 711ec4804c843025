package web

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"pastebin/api/problem"
	"pastebin/api/site"
	"pastebin/paste"
)

// maxTokenForm bounds the delete form's body: a token and the page's few fields.
const maxTokenForm = 4 << 10

// Deleter deletes a paste for the owner of token: paste.Remover's Delete, behind the limit on a
// client's wrong tokens.
type Deleter interface {
	Delete(ctx context.Context, code, token string) error
}

// HandleDelete handles POST /{code}/delete, the delete form of pages without JavaScript. The token
// comes only from what the person typed into the form: never from a cookie or anything else the
// browser would send by itself, so no other site can make a browser delete a paste.
func HandleDelete(st *site.Site, d Deleter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxTokenForm)
		token := strings.TrimSpace(r.PostFormValue("token"))
		if len(token) != paste.TokenLength {
			st.Error(w, r, problem.BadRequest.WithDetail("Enter the delete token you were given when the paste was created."))
			return
		}
		code := chi.URLParam(r, "code")
		if err := d.Delete(r.Context(), code, token); err != nil {
			st.Error(w, r, err)
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
func setTokenCookie(w http.ResponseWriter, r *http.Request, st *site.Site, code, token string) {
	http.SetCookie(w, &http.Cookie{
		Name: tokenCookie, Value: token, Path: "/" + code, MaxAge: 300, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: st.Secure(r),
	})
}

// takeTokenCookie reads the token cookie and clears it, so the token is shown only once.
func takeTokenCookie(w http.ResponseWriter, r *http.Request, code string) string {
	c, err := r.Cookie(tokenCookie)
	if err != nil {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Path: "/" + code, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	if len(c.Value) != paste.TokenLength {
		return ""
	}
	return c.Value
}
