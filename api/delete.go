package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"pastebin/api/problem"
	"pastebin/api/site"
	"pastebin/api/web"
	"pastebin/paste"
	"pastebin/store"
)

// handlePasteDelete handles DELETE /api/v1/pastes/{code} and DELETE /{code}, with the owner token as
// a bearer token. It answers 204 the first time and every time after.
func handlePasteDelete(st *site.Site, d web.Deleter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok || len(token) != paste.TokenLength {
			st.Error(w, r, problem.Unauthorized.WithDetail("Send the paste's delete token as Authorization: Bearer <token>."))
			return
		}
		if err := d.Delete(r.Context(), chi.URLParam(r, "code"), token); err != nil {
			st.Error(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// bearerToken reads an Authorization: Bearer header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// limitedDelete is the owner's delete (paste.Remover) behind the limit on a client's wrong tokens:
// a client that sent too many is refused before its token is checked, so that even a right guess
// then tells it nothing. The API's DELETE and the page's delete form share it.
type limitedDelete struct {
	remover  *paste.Remover
	failures *failureLimiter // nil: no limit
	refused  *prometheus.CounterVec
	rate     Rate
}

// Delete deletes the paste code for the owner of token, unless the client of ctx is over its limit.
func (d *limitedDelete) Delete(ctx context.Context, code, token string) error {
	if retry, over := d.failures.exhausted(ctx); over {
		d.refused.WithLabelValues("delete_failures").Inc()
		return rateLimited(d.rate, "failed deletes", retry)
	}
	err := d.remover.Delete(ctx, code, token)
	if errors.Is(err, store.ErrForbidden) {
		d.failures.failed(ctx)
	}
	return err
}
