// Package admin is the operators' side of the HTTP surface, everything under /admin: the JSON admin
// API, where operators trigger and watch cleanup, take pastes down, block content and read the
// audit log with the admin token as a bearer token, and the console, the same in a browser behind
// a session. Both run the same flows (package paste) and read the same store.
package admin

import (
	"log/slog"
	"net/http"
	"strconv"

	"pastebin/api/problem"
	"pastebin/store"
)

// CleanupRunner starts cleanup runs; the expiry package's Expirer is one. An admin's request
// (audit not nil) is recorded with the run it started or joined.
type CleanupRunner interface {
	Start(trigger string, audit *store.AuditRecord) (int64, error)
	Workers() int
}

// HandleCleanupStart handles POST /admin/cleanup: a run starts now, in the background, and the
// answer is its id. While a run is in progress in this process the answer is that run.
func HandleCleanupStart(logger *slog.Logger, s *store.Store, cleanup CleanupRunner, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !canRun(cleanup) {
			problem.Write(w, r, problem.CleanupDisabled.WithDetail("This process runs no cleanup workers (PASTEBIN_CLEANUP_WORKERS=0)."))
			return
		}
		id, err := cleanup.Start("admin", &store.AuditRecord{Actor: by, Action: store.ActionCleanup})
		var run store.Run
		if err == nil {
			run, err = s.Run(r.Context(), id)
		}
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		w.Header().Set("Location", "/admin/cleanup/runs/"+strconv.FormatInt(run.ID, 10))
		problem.WriteJSON(w, http.StatusAccepted, run)
	})
}

// HandleCleanupRuns handles GET /admin/cleanup/runs: the latest runs of every replica, newest first.
func HandleCleanupRuns(logger *slog.Logger, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, perr := limitParam(r, 50)
		if perr != nil {
			problem.Write(w, r, perr)
			return
		}
		runs, err := s.Runs(r.Context(), limit)
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		if runs == nil {
			runs = []store.Run{}
		}
		problem.WriteJSON(w, http.StatusOK, map[string]any{"runs": runs})
	})
}

// HandleCleanupRun handles GET /admin/cleanup/runs/{id}, live while the run goes.
func HandleCleanupRun(logger *slog.Logger, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run, err := readRun(r, s)
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		problem.WriteJSON(w, http.StatusOK, run)
	})
}

// HandleCleanupBacklog handles GET /admin/cleanup/backlog: the work waiting for cleanup.
func HandleCleanupBacklog(logger *slog.Logger, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := s.Backlog(r.Context())
		if err != nil {
			problem.Write(w, r, problem.From(r, logger, err))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		problem.WriteJSON(w, http.StatusOK, b)
	})
}
