package admin

import (
	"context"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"

	"pastebin/api/problem"
	"pastebin/api/site"
	"pastebin/paste"
)

// The spam signal's hottest contents (docs/design.md, "Spam signal"): the JSON list, the console's
// page, and its one-click block.

// HotLister lists the contents created by the most distinct clients in the spam signal's window.
type HotLister interface {
	Hottest(ctx context.Context, n int) ([]paste.HotContent, error)
	Threshold() paste.SpamThreshold
}

// hotJSON is a content of GET /admin/content/hot.
type hotJSON struct {
	ContentHash string   `json:"content_hash"`
	Clients     int      `json:"clients"`
	Hot         bool     `json:"hot"`
	Stored      bool     `json:"stored"`
	RefCount    int64    `json:"ref_count"`
	Blocked     bool     `json:"blocked"`
	Pastes      []string `json:"pastes"`
}

// thresholdJSON is the spam threshold, or null when the signal is off.
type thresholdJSON struct {
	Clients       int   `json:"clients"`
	WindowSeconds int64 `json:"window_seconds"`
}

// HandleHotList handles GET /admin/content/hot: the hottest contents, the most distinct clients
// first (limit, 20 by default).
func HandleHotList(logger *slog.Logger, hot HotLister) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, perr := limitParam(r, 20)
		if perr != nil {
			problem.Write(w, r, perr)
			return
		}
		list, err := hot.Hottest(r.Context(), limit)
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		out := make([]hotJSON, len(list))
		for i, h := range list {
			out[i] = hotJSON{ContentHash: hex.EncodeToString(h.Hash), Clients: h.Clients, Hot: h.Hot, Stored: h.Stored,
				RefCount: h.RefCount, Blocked: h.Blocked, Pastes: append([]string{}, h.Codes...)}
		}
		var threshold *thresholdJSON
		if t := hot.Threshold(); t.On() {
			threshold = &thresholdJSON{Clients: t.Clients, WindowSeconds: int64(t.Window.Seconds())}
		}
		w.Header().Set("Cache-Control", "no-store")
		problem.WriteJSON(w, http.StatusOK, map[string]any{"threshold": threshold, "contents": out})
	})
}

// hotPageSize is how many contents the console's page lists.
const hotPageSize = 20

type hotView struct {
	view
	On        bool
	Threshold string // such as "20 distinct clients in 10m"
	Reason    string // the one-click block's, which the operator may change
	List      []hotRow
}

type hotRow struct {
	paste.HotContent
	HexHash, Short string
}

// spamReason is the reason the one-click block records, unless the operator writes another.
const spamReason = "spam: the same content from many clients"

func (c *Console) renderHot(w http.ResponseWriter, r *http.Request, hot HotLister, status int, v hotView) {
	t := hot.Threshold()
	v.On, v.Reason = t.On(), spamReason
	if v.On {
		v.Threshold = site.Plural(int64(t.Clients), "distinct client") + " in " + paste.FormatDuration(t.Window)
	}
	list, err := hot.Hottest(r.Context(), hotPageSize)
	if err != nil {
		c.failed(w, r, err)
		return
	}
	for _, h := range list {
		hx := hex.EncodeToString(h.Hash)
		v.List = append(v.List, hotRow{HotContent: h, HexHash: hx, Short: hx[:12]})
	}
	c.render(w, r, status, "hot", "Hot content", v)
}

// HandleHotPage handles GET /admin/content/hot for browsers: the hottest contents, each with a
// button that blocks it and takes down every copy.
func HandleHotPage(c *Console, hot HotLister) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.renderHot(w, r, hot, http.StatusOK, hotView{view: c.view(r, "hot")})
	})
}

// HandleHotBlockForm handles POST /admin/content/hot: one click blocks a content and takes down
// every paste of it, the same block as POST /admin/blocked with take_down, in the audit log.
func HandleHotBlockForm(c *Console, hot HotLister, rm *paste.Remover) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := hotView{view: c.view(r, "hot")}
		reason := strings.TrimSpace(r.PostFormValue("reason"))
		if reason == "" {
			reason = spamReason
		}
		req := blockRequest{ContentHash: strings.ToLower(strings.TrimSpace(r.PostFormValue("hash"))), Reason: reason, TakeDown: true}
		notice, p, err := c.blockFromForm(r, rm, req)
		if p != nil {
			v.Error = p.Detail
			c.renderHot(w, r, hot, p.Status, v)
			return
		} else if err != nil {
			c.failed(w, r, err)
			return
		}
		v.Notice = notice
		c.renderHot(w, r, hot, http.StatusOK, v)
	})
}
