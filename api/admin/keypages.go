package admin

import (
	"net/http"
	"strconv"
	"strings"

	"pastebin/api/site"
	"pastebin/paste"
	"pastebin/store"
)

// The console's creator keys: the list with the form that mints one, and one key's page with its
// pastes and the takedown of them all. The JSON API's are in keys.go.

type keysView struct {
	view
	Keys              []store.CreatorKey
	Label, CreateRate string
	Minted            *mintedJSON // the key just minted, whose secret the page shows this once
}

func (c *Console) renderKeys(w http.ResponseWriter, r *http.Request, s *store.Store, status int, v keysView) {
	list, err := s.CreatorKeys(r.Context())
	if err != nil {
		c.failed(w, r, err)
		return
	}
	v.Keys = list
	if v.Minted != nil {
		w.Header().Set("Cache-Control", "no-store") // the secret is shown this once
	}
	c.render(w, r, status, "keys", "Creator keys", v)
}

// HandleKeysPage handles GET /admin/keys for browsers.
func HandleKeysPage(c *Console, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.renderKeys(w, r, s, http.StatusOK, keysView{view: c.view(r, "keys")})
	})
}

// HandleKeyMintForm handles the console's form that mints a key: the same as POST /admin/keys.
func HandleKeyMintForm(c *Console, s *store.Store, keys *paste.Keys, rate RateCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := keysView{view: c.view(r, "keys"), Label: r.PostFormValue("label"), CreateRate: r.PostFormValue("create_rate")}
		req, p := keyRequest{Label: v.Label, CreateRate: v.CreateRate}.check(rate)
		if p != nil {
			v.Error = p.Detail
			c.renderKeys(w, r, s, p.Status, v)
			return
		}
		k, secret, err := keys.Mint(r.Context(), req.Label, req.CreateRate, sessionOf(r).actor)
		if err != nil {
			c.failed(w, r, err)
			return
		}
		v.Minted = &mintedJSON{ID: k.ID, Key: secret, Label: k.Label, CreatedAt: k.CreatedAt, CreateRate: k.CreateRate}
		v.Notice = "Key " + strconv.FormatInt(k.ID, 10) + " (" + k.Label + ") is minted. Copy it now: it is not shown again."
		v.Label, v.CreateRate = "", ""
		c.renderKeys(w, r, s, http.StatusCreated, v)
	})
}

// HandleKeyRevokeForm handles POST /admin/keys/{id}/revoke: the same as DELETE /admin/keys/{id}.
func HandleKeyRevokeForm(c *Console, s *store.Store, keys *paste.Keys) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := keysView{view: c.view(r, "keys")}
		id, p := keyID(r)
		if p != nil {
			c.site.ErrorPage(w, r, p)
			return
		}
		rev, err := keys.Revoke(r.Context(), id, r.PostFormValue("reason"), sessionOf(r).actor)
		if err != nil {
			c.failed(w, r, keyError(err))
			return
		}
		v.Notice = "Key " + strconv.FormatInt(id, 10) + " is revoked: no create with it commits from now on."
		if !rev.Revoked {
			v.Notice = "Key " + strconv.FormatInt(id, 10) + " was revoked already."
		}
		c.renderKeys(w, r, s, http.StatusOK, v)
	})
}

type keyView struct {
	view
	Key           store.CreatorKey
	Pastes        []store.KeyPaste
	Next          string // the next page's cursor
	Reason        string
	Legal, Revoke bool
}

func (c *Console) renderKey(w http.ResponseWriter, r *http.Request, s *store.Store, status int, id int64, v keyView) {
	k, list, next, err := keyPage(r, s, id, 100)
	if err != nil {
		c.failed(w, r, keyError(err))
		return
	}
	v.Key, v.Pastes, v.Next = k, list, next
	c.render(w, r, status, "key", "Key "+strconv.FormatInt(id, 10), v)
}

// HandleKeyPage handles GET /admin/keys/{id}/pastes for browsers: the key, its pastes a page at a
// time, and the form that takes them all down.
func HandleKeyPage(c *Console, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, p := keyID(r)
		if p != nil {
			c.site.ErrorPage(w, r, p)
			return
		}
		c.renderKey(w, r, s, http.StatusOK, id, keyView{view: c.view(r, "keys"), Revoke: true})
	})
}

// HandleKeyTakedownForm handles the console's takedown by key: the same as POST
// /admin/keys/{id}/takedown.
func HandleKeyTakedownForm(c *Console, s *store.Store, keys *paste.Keys) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, p := keyID(r)
		if p != nil {
			c.site.ErrorPage(w, r, p)
			return
		}
		v := keyView{view: c.view(r, "keys"), Reason: r.PostFormValue("reason"), Legal: r.PostFormValue("legal") != "",
			Revoke: r.PostFormValue("revoke") != ""}
		if p := checkReason(v.Reason); p != nil {
			v.Error = p.Detail
			c.renderKey(w, r, s, p.Status, id, v)
			return
		}
		res, err := keys.TakeDown(r.Context(), store.KeyTakedown{ID: id, Reason: v.Reason, Legal: v.Legal, Revoke: v.Revoke}, sessionOf(r).actor)
		if err != nil {
			c.failed(w, r, keyError(err))
			return
		}
		v.Notice = site.Plural(int64(len(res.Codes)), "paste") + " of this key taken down."
		if res.Revoked {
			v.Notice += " The key is revoked."
		}
		v.Reason, v.Legal = "", false
		c.renderKey(w, r, s, http.StatusOK, id, v)
	})
}

// Prefix is the start of a paste's title, short enough for a table cell.
func (v keyView) Prefix(title string) string {
	if len(title) <= 60 {
		return title
	}
	return strings.ToValidUTF8(title[:60], "") + "…"
}
