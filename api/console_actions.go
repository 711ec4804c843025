package api

import (
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"pastebin/store"
)

// The console's takedown, blocked content and audit log pages.

type takedownView struct {
	consoleView
	Code, Reason string
	Legal, Block bool
}

// handleTakedownPage handles GET /admin/takedown: the takedown form.
func (c *console) handleTakedownPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := takedownView{consoleView: c.view(r, "takedown"), Code: r.URL.Query().Get("code")}
		c.render(w, r, http.StatusOK, "takedown", "Take down", v)
	})
}

// handleTakedown handles the takedown form: the same takedown as DELETE /admin/pastes/{code}.
func (c *console) handleTakedown() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := takedownView{consoleView: c.view(r, "takedown"), Code: strings.TrimSpace(r.PostFormValue("code")),
			Reason: r.PostFormValue("reason"), Legal: r.PostFormValue("legal") != "", Block: r.PostFormValue("block") != ""}
		t := store.Takedown{Code: codeOf(v.Code), Reason: v.Reason, Legal: v.Legal, Block: v.Block}
		var err error
		if perr := checkReason(t.Reason); perr != nil {
			err = perr
		}
		var res store.TakedownResult
		if err == nil {
			res, err = c.ps.takeDown(r.Context(), t, sessionOf(r).actor)
		}
		if p := formProblem(r, c, err); p != nil {
			v.Error = p.detail
			c.render(w, r, p.status, "takedown", "Take down", v)
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
		msg += " Its content is blocked; " + plural(int64(len(res.Codes)), "paste") + " taken down in all."
	}
	return msg
}

// formProblem is the problem to show on a console form for err, or nil when err is nil or not
// something the operator can correct there.
func formProblem(r *http.Request, c *console, err error) *problem {
	if err == nil {
		return nil
	}
	p := asProblem(r, c.ps.logger, err)
	switch p.status {
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
	consoleView
	List            []store.Blocked
	Target, Reason  string
	Legal, TakeDown bool
}

func (c *console) renderBlocked(w http.ResponseWriter, r *http.Request, status int, v blockedView) {
	list, err := c.ps.store.BlockedContent(r.Context(), 1000)
	if err != nil {
		c.failed(w, r, err)
		return
	}
	v.List = list
	c.render(w, r, status, "blocked", "Blocked content", v)
}

// handleBlockedPage handles GET /admin/blocked for browsers: the blocked content, and a form.
func (c *console) handleBlockedPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.renderBlocked(w, r, http.StatusOK, blockedView{consoleView: c.view(r, "blocked"), TakeDown: true})
	})
}

// handleBlock handles the block form: the content by its hash, or as a paste's.
func (c *console) handleBlock() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := blockedView{consoleView: c.view(r, "blocked"), Target: strings.TrimSpace(r.PostFormValue("target")),
			Reason: r.PostFormValue("reason"), Legal: r.PostFormValue("legal") != "", TakeDown: r.PostFormValue("take_down") != ""}
		req := blockRequest{Reason: v.Reason, Legal: v.Legal, TakeDown: v.TakeDown}
		if len(v.Target) == 64 {
			req.ContentHash = v.Target
		} else {
			req.Code = codeOf(v.Target)
		}
		b, err := req.toBlock()
		var res store.BlockResult
		if err == nil {
			res, err = c.ps.block(r.Context(), b, sessionOf(r).actor)
		}
		if p := formProblem(r, c, err); p != nil {
			v.Error = p.detail
			c.renderBlocked(w, r, p.status, v)
			return
		} else if err != nil {
			c.failed(w, r, err)
			return
		}
		v.Notice = "Content " + shortHash(res.ContentHash) + " is blocked; " + plural(int64(len(res.Codes)), "paste") + " taken down."
		if !res.Added {
			v.Notice = "Content " + shortHash(res.ContentHash) + " was blocked already; " + plural(int64(len(res.Codes)), "paste") + " taken down."
		}
		v.Target, v.Reason, v.Legal, v.TakeDown = "", "", false, true
		c.renderBlocked(w, r, http.StatusOK, v)
	})
}

// handleUnblock handles POST /admin/blocked/{hash}/unblock: the same unblock as DELETE
// /admin/blocked/{hash}, with the same required reason of at most maxReason bytes.
func (c *console) handleUnblock() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hash, err := store.ParseContentHash(chi.URLParam(r, "hash"))
		if err != nil {
			c.web.errorPage(w, r, errBadRequest.withDetail(err.Error()+"."))
			return
		}
		v := blockedView{consoleView: c.view(r, "blocked"), TakeDown: true}
		reason := r.PostFormValue("reason")
		if p := checkReason(reason); p != nil {
			v.Error = "Unblocking " + shortHash(hash) + ": " + p.detail
			c.renderBlocked(w, r, p.status, v)
			return
		}
		removed, err := c.ps.store.Unblock(r.Context(), hash, reason, sessionOf(r).actor)
		if err != nil {
			c.failed(w, r, err)
			return
		}
		v.Notice = "Content " + shortHash(hash) + " is no longer blocked."
		if !removed {
			v.Notice = "Content " + shortHash(hash) + " was not blocked."
		}
		c.renderBlocked(w, r, http.StatusOK, v)
	})
}

// shortHash is the start of a content hash, enough for a person to recognize it.
func shortHash(h []byte) string { return hex.EncodeToString(h)[:min(12, 2*len(h))] + "…" }

type auditView struct {
	consoleView
	Entries []auditRow
	Next    string
}

// auditRow is an audit entry as the console shows it.
type auditRow struct{ store.AuditEntry }

// When is the entry's time, for people.
func (a auditRow) When() string { return a.At.UTC().Format("2006-01-02 15:04:05 UTC") }

// Details says what the action did, from the entry's detail: "legal: true, pastes: 3".
func (a auditRow) Details() string {
	keys := slices.Sorted(maps.Keys(a.Detail))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strings.ReplaceAll(k, "_", " ") + ": " + fmt.Sprint(a.Detail[k])
	}
	return strings.Join(parts, ", ")
}

// handleAuditPage handles GET /admin/audit for browsers.
func (c *console) handleAuditPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := c.ps.readAuditPage(r, "/admin/audit")
		if err != nil {
			c.failed(w, r, err)
			return
		}
		v := auditView{consoleView: c.view(r, "audit"), Next: p.Next}
		for _, e := range p.Entries {
			v.Entries = append(v.Entries, auditRow{e})
		}
		c.render(w, r, http.StatusOK, "audit", "Audit log", v)
	})
}
