package admin

import (
	"encoding/hex"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"pastebin/api/problem"
	"pastebin/paste"
	"pastebin/store"
)

// The JSON admin API's reports: the cases, and the decisions that close them. The console's pages
// of the same are in reportspages.go.

// reportStates are the states GET /admin/reports filters by.
var reportStates = []string{store.ReportOpen, store.ReportActioned, store.ReportDismissed}

// stateParam reads the state query parameter: open when absent.
func stateParam(r *http.Request) (string, *problem.Problem) {
	state := r.URL.Query().Get("state")
	if state == "" {
		return store.ReportOpen, nil
	}
	if !slices.Contains(reportStates, state) {
		return "", problem.BadRequest.WithDetail("state must be one of " + strings.Join(reportStates, ", ") + ".")
	}
	return state, nil
}

// caseHash reads the {hash} of a case's address.
func caseHash(r *http.Request) ([]byte, *problem.Problem) {
	h, err := store.ParseContentHash(strings.ToLower(chi.URLParam(r, "hash")))
	if err != nil {
		return nil, problem.BadRequest.WithDetail(err.Error() + ".")
	}
	return h, nil
}

// HandleReports handles GET /admin/reports: the reports in a state (open unless ?state= says),
// grouped by content into cases, the case of the newest report first.
func HandleReports(logger *slog.Logger, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		state, perr := stateParam(r)
		limit, lerr := limitParam(r, 1000)
		if p := firstProblem(perr, lerr); p != nil {
			problem.Write(w, r, p)
			return
		}
		cases, err := s.Cases(r.Context(), state, limit)
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		problem.WriteJSON(w, http.StatusOK, map[string]any{"state": state, "cases": cases})
	})
}

// firstProblem is the first of ps that is not nil, or nil.
func firstProblem(ps ...*problem.Problem) *problem.Problem {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

// caseJSON is the answer to a decision on a case.
type caseJSON struct {
	ContentHash     string `json:"content_hash"`
	Action          string `json:"action"`
	PastesTakenDown int    `json:"pastes_taken_down"`
	ReportsClosed   int64  `json:"reports_closed"`
	Blocked         bool   `json:"blocked"`
}

// HandleCaseTakedown handles POST /admin/reports/{hash}/takedown: the pastes of the case are taken
// down (legal: 451), and with block its content is blocked too; their open reports are closed.
func HandleCaseTakedown(logger *slog.Logger, cs *paste.Cases, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hash, perr := caseHash(r)
		var req takedownRequest
		if perr == nil {
			perr = decodeAdminRequest(r, &req, map[string]*bool{"legal": &req.Legal, "block": &req.Block}, &req.Reason)
		}
		if perr != nil {
			problem.Write(w, r, perr)
			return
		}
		res, err := cs.TakeDown(r.Context(), hash, paste.CaseAction{Reason: req.Reason, Legal: req.Legal, Block: req.Block}, by)
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		problem.WriteJSON(w, http.StatusOK, caseJSON{ContentHash: hex.EncodeToString(hash), Action: caseActionName(req.Legal, req.Block),
			PastesTakenDown: res.PastesTakenDown, ReportsClosed: res.ReportsClosed, Blocked: res.Blocked})
	})
}

// caseActionName names a decision as the reports it closes record it (closed_action).
func caseActionName(legal, block bool) string {
	if block {
		return store.ActionBlock
	}
	return store.TakedownReason(legal)
}

// HandleCaseDismiss handles POST /admin/reports/{hash}/dismiss: the open reports of the case are
// closed as dismissed, nothing else changes.
func HandleCaseDismiss(logger *slog.Logger, cs *paste.Cases, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hash, perr := caseHash(r)
		var req struct {
			Reason string `json:"reason"`
		}
		if perr == nil {
			perr = decodeAdminRequest(r, &req, nil, &req.Reason)
		}
		if perr != nil {
			problem.Write(w, r, perr)
			return
		}
		res, err := cs.Dismiss(r.Context(), hash, req.Reason, by)
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		problem.WriteJSON(w, http.StatusOK, caseJSON{ContentHash: hex.EncodeToString(hash), Action: store.ActionDismiss,
			ReportsClosed: res.ReportsClosed})
	})
}
