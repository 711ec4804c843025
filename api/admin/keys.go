package admin

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"pastebin/api/problem"
	"pastebin/paste"
	"pastebin/store"
)

// The JSON admin API's creator keys (docs/operations.md, "Creator keys"); the console's pages of
// them are in keypages.go.

// RateCheck reads a create rate as PASTEBIN_CREATE_RATE is written, answering it as it is stored.
type RateCheck func(string) (string, error)

// keyRequest is the body of POST /admin/keys, and the console's form.
type keyRequest struct {
	Label      string `json:"label"`
	CreateRate string `json:"create_rate"`
}

// maxLabel bounds a key's label (migrations/00053_creator_keys.sql).
const maxLabel = 200

// check reads the request: a label, and a create rate, the default when empty.
func (req keyRequest) check(rate RateCheck) (keyRequest, *problem.Problem) {
	req.Label = strings.TrimSpace(req.Label)
	if req.Label == "" || len(req.Label) > maxLabel {
		return req, problem.BadRequest.WithDetail("Give the key a label of 1 to " + strconv.Itoa(maxLabel) + " bytes: who holds it, or what for.")
	}
	if strings.TrimSpace(req.CreateRate) == "" {
		req.CreateRate = "120/1m"
	}
	r, err := rate(req.CreateRate)
	if err != nil {
		return req, problem.BadRequest.WithDetail("create_rate: " + err.Error() + ".")
	}
	req.CreateRate = r
	return req, nil
}

// mintedJSON is the answer to POST /admin/keys: the key's secret, this once.
type mintedJSON struct {
	ID         int64     `json:"id"`
	Key        string    `json:"key"`
	Label      string    `json:"label"`
	CreatedAt  time.Time `json:"created_at"`
	CreateRate string    `json:"create_rate"`
}

// HandleKeyCreate handles POST /admin/keys: 201 with the new key, whose secret is shown this once.
func HandleKeyCreate(logger *slog.Logger, keys *paste.Keys, rate RateCheck, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req keyRequest
		if p := decodeJSONBody(r, &req); p != nil {
			problem.Write(w, r, p)
			return
		}
		req, p := req.check(rate)
		if p != nil {
			problem.Write(w, r, p)
			return
		}
		k, secret, err := keys.Mint(r.Context(), req.Label, req.CreateRate, by)
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		w.Header().Set("Location", "/admin/keys/"+strconv.FormatInt(k.ID, 10)+"/pastes")
		w.Header().Set("Cache-Control", "no-store")
		problem.WriteJSON(w, http.StatusCreated, mintedJSON{ID: k.ID, Key: secret, Label: k.Label, CreatedAt: k.CreatedAt, CreateRate: k.CreateRate})
	})
}

// HandleKeyList handles GET /admin/keys: every key, newest first, without its secret.
func HandleKeyList(logger *slog.Logger, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list, err := s.CreatorKeys(r.Context())
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		if list == nil {
			list = []store.CreatorKey{}
		}
		w.Header().Set("Cache-Control", "no-store")
		problem.WriteJSON(w, http.StatusOK, map[string]any{"keys": list})
	})
}

// HandleKeyRevoke handles DELETE /admin/keys/{id}, with an optional reason parameter: revoking a
// revoked key answers the same, with revoked_now false.
func HandleKeyRevoke(logger *slog.Logger, keys *paste.Keys, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, p := keyID(r)
		reason := r.URL.Query().Get("reason")
		if p == nil && len(reason) > maxReason {
			p = problem.BadRequest.WithDetail("The reason is longer than " + strconv.Itoa(maxReason) + " bytes.")
		}
		if p != nil {
			problem.Write(w, r, p)
			return
		}
		rev, err := keys.Revoke(r.Context(), id, reason, by)
		if err != nil {
			problem.Write(w, r, keyProblem(r, logger, err))
			return
		}
		problem.WriteJSON(w, http.StatusOK, map[string]any{"id": id, "revoked": true, "revoked_now": rev.Revoked, "pastes": rev.Pastes})
	})
}

// keyTakedownRequest is the body of POST /admin/keys/{id}/takedown; its fields may come as query
// parameters instead.
type keyTakedownRequest struct {
	Reason string `json:"reason"`
	Legal  bool   `json:"legal"`
	Revoke bool   `json:"revoke"`
}

// HandleKeyTakedown handles POST /admin/keys/{id}/takedown: every paste the key created that is
// not removed yet is taken down, in one transaction; with revoke, the key is revoked in it too.
func HandleKeyTakedown(logger *slog.Logger, keys *paste.Keys, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req keyTakedownRequest
		id, p := keyID(r)
		if p == nil {
			p = decodeAdminRequest(r, &req, map[string]*bool{"legal": &req.Legal, "revoke": &req.Revoke}, &req.Reason)
		}
		if p != nil {
			problem.Write(w, r, p)
			return
		}
		res, err := keys.TakeDown(r.Context(), store.KeyTakedown{ID: id, Reason: req.Reason, Legal: req.Legal, Revoke: req.Revoke}, by)
		if err != nil {
			problem.Write(w, r, keyProblem(r, logger, err))
			return
		}
		problem.WriteJSON(w, http.StatusOK, map[string]any{"id": id, "legal": req.Legal, "pastes_taken_down": len(res.Codes),
			"content_freed": res.FreedContent, "revoked_now": res.Revoked, "reports_closed": res.ReportsClosed})
	})
}

// HandleKeyPastes handles GET /admin/keys/{id}/pastes: the key's pastes not removed yet, newest
// first, a page of limit at a time (cursor: the previous page's next_cursor).
func HandleKeyPastes(logger *slog.Logger, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, p := keyID(r)
		limit := 100
		if p == nil {
			limit, p = limitParam(r, 100)
		}
		if p != nil {
			problem.Write(w, r, p)
			return
		}
		k, list, next, err := keyPage(r, s, id, limit)
		if err != nil {
			problem.Write(w, r, keyProblem(r, logger, err))
			return
		}
		var cursor *string
		if next != "" {
			cursor = &next
		}
		w.Header().Set("Cache-Control", "no-store")
		problem.WriteJSON(w, http.StatusOK, map[string]any{"key": k, "pastes": list, "next_cursor": cursor})
	})
}

// keyPage is the key id and a page of its pastes, from the request's cursor.
func keyPage(r *http.Request, s *store.Store, id int64, limit int) (store.CreatorKey, []store.KeyPaste, string, error) {
	k, err := s.CreatorKey(r.Context(), id)
	if err != nil {
		return k, nil, "", err
	}
	list, next, err := s.KeyPastes(r.Context(), id, r.URL.Query().Get("cursor"), limit)
	if list == nil {
		list = []store.KeyPaste{}
	}
	return k, list, next, err
}

// keyID reads the {id} of a key's address.
func keyID(r *http.Request) (int64, *problem.Problem) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		return 0, problem.KeyNotFound.WithDetail("A creator key's id is a positive number.")
	}
	return id, nil
}

// keyProblem is the problem of a key route's error (keyError).
func keyProblem(r *http.Request, logger *slog.Logger, err error) *problem.Problem {
	return problem.From(r, logger, keyError(err))
}

// keyError names the errors of the key routes: the store's not-found is the key's here.
func keyError(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return problem.KeyNotFound.WithDetail("There is no creator key with this id.")
	case errors.Is(err, store.ErrBadCursor):
		return problem.BadRequest.WithDetail("cursor is not one this listing handed out.")
	}
	return err
}
