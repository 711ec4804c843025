package request

import (
	"net/http"
	"strings"
)

// CreatorKeyCookie keeps the creator key a person typed into the create form, so that the form
// asks for it once (web.HandleCreate). It is HttpOnly and SameSite=Strict: no script reads it, and
// no other site's form sends it.
const CreatorKeyCookie = "creator_key"

// CreatorKey is the creator key a create request brings: its Authorization: Bearer header, else
// the form's cookie. fromHeader tells which, since a bad key in a header is the client's mistake to
// answer at once, and a bad one in the cookie is the form's to ask for again.
func CreatorKey(r *http.Request) (key string, fromHeader bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		if token = strings.TrimSpace(token); token != "" {
			return token, true
		}
	}
	if c, err := r.Cookie(CreatorKeyCookie); err == nil {
		return c.Value, false
	}
	return "", false
}
