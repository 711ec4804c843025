package admin

import (
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"pastebin/api/problem"
	"pastebin/api/site"
	"pastebin/paste"
	"pastebin/store"
)

// The console's takedown and blocked content pages, and their forms.

type takedownView struct {
	view
	Code, Reason string
	Legal, Block bool
}

// HandleTakedownPage handles GET /admin/takedown: the takedown form.
func HandleTakedownPage(c *Console) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := takedownView{view: c.view(r, "takedown"), Code: r.URL.Query().Get("code")}
		c.render(w, r, http.StatusOK, "takedown", "Take down", v)
	})
}

// HandleTakedownForm handles the takedown form: the same takedown as DELETE /admin/pastes/{code}.
func HandleTakedownForm(c *Console, rm *paste.Remover) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := takedownView{view: c.view(r, "takedown"), Code: strings.TrimSpace(r.PostFormValue("code")),
			Reason: r.PostFormValue("reason"), Legal: r.PostFormValue("legal") != "", Block: r.PostFormValue("block") != ""}
		t := store.Takedown{Code: codeOf(v.Code), Reason: v.Reason, Legal: v.Legal, Block: v.Block}
		var err error
		if perr := checkReason(t.Reason); perr != nil {
			err = perr
		}
		var res store.TakedownResult
		if err == nil {
			res, err = rm.TakeDown(r.Context(), t, sessionOf(r).actor)
		}
		if p := c.formProblem(r, err); p != nil {
			v.Error = p.Detail
			c.render(w, r, p.Status, "takedown", "Take down", v)
			return
		} else if err != nil {
			c.failed(w, r, err)
			return
		}
		v.Notice = takedownNotice(t.Code, res)
		v.Code, v.Reason, v.Legal, v.Block = "", "", false, false
		c.render(w, r, http.StatusOK, "takedown", "Take down", v)
	})
}

func takedownNotice(code string, res store.TakedownResult) string {
	msg := "Paste " + code + " was gone already; nothing changed."
	if res.TakenDown {
		msg = "Paste " + code + " is taken down."
	}
	if res.Blocked {
		msg += " Its content is blocked; " + site.Plural(int64(len(res.Codes)), "paste") + " taken down in all."
	}
	if res.ReportsClosed > 0 {
		msg += " " + site.Plural(res.ReportsClosed, "open report") + " closed."
	}
	return msg
}

// formProblem is the problem to show on a console form for err, or nil when err is nil or not
// something the operator can correct there.
func (c *Console) formProblem(r *http.Request, err error) *problem.Problem {
	if err == nil {
		return nil
	}
	p := c.site.Problem(r, err)
	switch p.Status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict:
		return p
	}
	return nil
}

// codeOf reads a paste's code from what an operator pasted: the code, or any of the paste's URLs.
func codeOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	return s[strings.LastIndex(strings.TrimSuffix(s, "/"), "/")+1:]
}

type blockedView struct {
	view
	List            []store.Blocked
	Target, Reason  string
	Legal, TakeDown bool
}

func (c *Console) renderBlocked(w http.ResponseWriter, r *http.Request, s *store.Store, status int, v blockedView) {
	list, err := s.BlockedContent(r.Context(), 1000)
	if err != nil {
		c.failed(w, r, err)
		return
	}
	v.List = list
	c.render(w, r, status, "blocked", "Blocked content", v)
}

// HandleBlockedPage handles GET /admin/blocked for browsers: the blocked content, and a form.
func HandleBlockedPage(c *Console, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.renderBlocked(w, r, s, http.StatusOK, blockedView{view: c.view(r, "blocked"), TakeDown: true})
	})
}

// HandleBlockForm handles the block form: the content by its hash, or as a paste's.
func HandleBlockForm(c *Console, s *store.Store, rm *paste.Remover) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := blockedView{view: c.view(r, "blocked"), Target: strings.TrimSpace(r.PostFormValue("target")),
			Reason: r.PostFormValue("reason"), Legal: r.PostFormValue("legal") != "", TakeDown: r.PostFormValue("take_down") != ""}
		req := blockRequest{Reason: v.Reason, Legal: v.Legal, TakeDown: v.TakeDown}
		if len(v.Target) == 64 {
			req.ContentHash = v.Target
		} else {
			req.Code = codeOf(v.Target)
		}
		notice, p, err := c.blockFromForm(r, rm, req)
		if p != nil {
			v.Error = p.Detail
			c.renderBlocked(w, r, s, p.Status, v)
			return
		} else if err != nil {
			c.failed(w, r, err)
			return
		}
		v.Notice = notice
		v.Target, v.Reason, v.Legal, v.TakeDown = "", "", false, true
		c.renderBlocked(w, r, s, http.StatusOK, v)
	})
}

// HandleUnblockForm handles POST /admin/blocked/{hash}/unblock: the same unblock as DELETE
// /admin/blocked/{hash}, with the same required reason of at most maxReason bytes.
func HandleUnblockForm(c *Console, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hash, err := store.ParseContentHash(chi.URLParam(r, "hash"))
		if err != nil {
			c.site.ErrorPage(w, r, problem.BadRequest.WithDetail(err.Error()+"."))
			return
		}
		v := blockedView{view: c.view(r, "blocked"), TakeDown: true}
		reason := r.PostFormValue("reason")
		if p := checkReason(reason); p != nil {
			v.Error = "Unblocking " + shortHash(hash) + ": " + p.Detail
			c.renderBlocked(w, r, s, p.Status, v)
			return
		}
		removed, err := s.Unblock(r.Context(), hash, reason, sessionOf(r).actor)
		if err != nil {
			c.failed(w, r, err)
			return
		}
		v.Notice = "Content " + shortHash(hash) + " is no longer blocked."
		if !removed {
			v.Notice = "Content " + shortHash(hash) + " was not blocked."
		}
		c.renderBlocked(w, r, s, http.StatusOK, v)
	})
}

// shortHash is the start of a content hash, enough for a person to recognize it.
func shortHash(h []byte) string { return hex.EncodeToString(h)[:min(12, 2*len(h))] + "…" }

// blockFromForm blocks what a console form asked for, as the signed-in operator, and answers the
// notice the page then shows, or the problem the form is shown again with (nil both: err is not the
// form's fault).
func (c *Console) blockFromForm(r *http.Request, rm *paste.Remover, req blockRequest) (string, *problem.Problem, error) {
	b, err := req.toBlock()
	var res store.BlockResult
	if err == nil {
		res, err = rm.Block(r.Context(), b, sessionOf(r).actor)
	}
	if p := c.formProblem(r, err); p != nil {
		return "", p, nil
	} else if err != nil {
		return "", nil, err
	}
	was := map[bool]string{true: " is blocked; ", false: " was blocked already; "}[res.Added]
	return "Content " + shortHash(res.ContentHash) + was + site.Plural(int64(len(res.Codes)), "paste") + " taken down.", nil, nil
}
