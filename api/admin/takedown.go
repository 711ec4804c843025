package admin

import (
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"pastebin/api/problem"
	"pastebin/paste"
	"pastebin/store"
)

// The JSON admin API's takedowns and blocked content; their requests are read in decode.go.

// takedownJSON is the answer to a takedown.
type takedownJSON struct {
	Code            string  `json:"code"`
	TakenDown       bool    `json:"taken_down"`
	Legal           bool    `json:"legal"`
	ContentHash     *string `json:"content_hash"`
	Blocked         bool    `json:"blocked"`
	PastesTakenDown int     `json:"pastes_taken_down"`
	ContentFreed    int     `json:"content_freed"`
	ReportsClosed   int64   `json:"reports_closed"`
}

// HandleTakedown handles DELETE /admin/pastes/{code}: an operator takes a paste down. Retried, it
// answers the same with taken_down false.
func HandleTakedown(logger *slog.Logger, rm *paste.Remover, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req takedownRequest
		if err := decodeAdminRequest(r, &req, map[string]*bool{"legal": &req.Legal, "block": &req.Block}, &req.Reason); err != nil {
			problem.Write(w, r, err)
			return
		}
		code := chi.URLParam(r, "code")
		res, err := rm.TakeDown(r.Context(), store.Takedown{Code: code, Reason: req.Reason, Legal: req.Legal, Block: req.Block}, by)
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		problem.WriteJSON(w, http.StatusOK, takedownJSON{Code: code, TakenDown: res.TakenDown, Legal: req.Legal,
			ContentHash: hexOrNil(res.ContentHash), Blocked: res.Blocked, PastesTakenDown: len(res.Codes), ContentFreed: res.FreedContent,
			ReportsClosed: res.ReportsClosed})
	})
}

// blockJSON is the answer to a block.
type blockJSON struct {
	ContentHash     string `json:"content_hash"`
	Added           bool   `json:"added"`
	PastesTakenDown int    `json:"pastes_taken_down"`
	ContentFreed    int    `json:"content_freed"`
	ReportsClosed   int64  `json:"reports_closed"`
}

// HandleBlock handles POST /admin/blocked: 201 when the content is newly blocked, 200 when it
// was already.
func HandleBlock(logger *slog.Logger, rm *paste.Remover, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req blockRequest
		if err := decodeJSONBody(r, &req); err != nil {
			problem.Write(w, r, err)
			return
		}
		b, err := req.toBlock()
		var res store.BlockResult
		if err == nil {
			res, err = rm.Block(r.Context(), b, by)
		}
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		status := http.StatusOK
		if res.Added {
			status = http.StatusCreated
		}
		problem.WriteJSON(w, status, blockJSON{ContentHash: hex.EncodeToString(res.ContentHash), Added: res.Added,
			PastesTakenDown: len(res.Codes), ContentFreed: res.FreedContent, ReportsClosed: res.ReportsClosed})
	})
}

// HandleUnblock handles DELETE /admin/blocked/{hash}, with its required reason parameter.
func HandleUnblock(logger *slog.Logger, s *store.Store, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hash, err := store.ParseContentHash(strings.ToLower(chi.URLParam(r, "hash")))
		if err != nil {
			problem.Write(w, r, problem.BadRequest.WithDetail(err.Error()+"."))
			return
		}
		reason := r.URL.Query().Get("reason")
		if p := checkReason(reason); p != nil {
			problem.Write(w, r, p)
			return
		}
		removed, err := s.Unblock(r.Context(), hash, reason, by)
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		problem.WriteJSON(w, http.StatusOK, map[string]any{"content_hash": hex.EncodeToString(hash), "removed": removed})
	})
}

// HandleBlockedList handles GET /admin/blocked: the blocked content, newest first.
func HandleBlockedList(logger *slog.Logger, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, perr := limitParam(r, 100)
		if perr != nil {
			problem.Write(w, r, perr)
			return
		}
		list, err := s.BlockedContent(r.Context(), limit)
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		if list == nil {
			list = []store.Blocked{}
		}
		w.Header().Set("Cache-Control", "no-store")
		problem.WriteJSON(w, http.StatusOK, map[string]any{"blocked": list})
	})
}

func hexOrNil(b []byte) *string {
	if b == nil {
		return nil
	}
	s := hex.EncodeToString(b)
	return &s
}
