package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"pastebin/store"
)

// CleanupRunner starts cleanup runs; the expiry package's Expirer is one. An admin's request
// (audit not nil) is recorded with the run it started or joined.
type CleanupRunner interface {
	Start(trigger string, audit *store.AuditRecord) (int64, error)
	Workers() int
}

// adminRoutes serves /admin: the JSON admin API, where operators trigger and watch cleanup, take
// pastes down and block content with the admin token as a bearer token, and the console, the same
// in a browser. Without a configured admin token every route answers that the admin API is off.
func adminRoutes(cfg Config, deps Deps, ps *pasteService) http.Handler {
	r := chi.NewRouter()
	auth := newAdminAuth(cfg, deps, ps)
	bearer := auth.requireAdmin
	by := store.TokenActor(cfg.AdminTokenHash, store.ViaAPI)
	r.Group(func(api chi.Router) {
		api.Use(bearer)
		api.Method(http.MethodPost, "/cleanup", handleCleanupStart(ps, deps.Cleanup, by))
		api.Method(http.MethodGet, "/cleanup/runs", handleCleanupRuns(ps))
		api.Method(http.MethodGet, "/cleanup/runs/{id}", handleCleanupRun(ps))
		api.Method(http.MethodGet, "/cleanup/backlog", handleCleanupBacklog(ps))
		api.Method(http.MethodDelete, "/pastes/{code}", handleAdminTakedown(ps, by))
		api.Method(http.MethodDelete, "/blocked/{hash}", handleAdminUnblock(ps, by))
	})
	c := newConsole(cfg, deps, ps, auth)
	r.Method(http.MethodGet, "/blocked", either(forConsole, c.signedIn(c.handleBlockedPage()), bearer(handleAdminBlockedList(ps))))
	r.Method(http.MethodPost, "/blocked", either(forConsole, c.signedIn(c.handleBlock()), bearer(handleAdminBlock(ps, by))))
	r.Method(http.MethodGet, "/audit", either(forConsole, c.signedIn(c.handleAuditPage()), bearer(handleAdminAudit(ps))))
	c.routes(r)
	return r
}

// handleCleanupStart handles POST /admin/cleanup: a run starts now, in the background, and the answer
// is its id. While a run is in progress in this process the answer is that run.
func handleCleanupStart(ps *pasteService, cleanup CleanupRunner, by store.Actor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cleanup == nil || cleanup.Workers() == 0 {
			writeProblem(w, r, errCleanupDisabled.withDetail("This process runs no cleanup workers (PASTEBIN_CLEANUP_WORKERS=0)."))
			return
		}
		run, err := startCleanup(r.Context(), ps, cleanup, by)
		if err != nil {
			ps.writeError(w, r, err)
			return
		}
		w.Header().Set("Location", "/admin/cleanup/runs/"+strconv.FormatInt(run.ID, 10))
		writeJSON(w, http.StatusAccepted, run)
	})
}

// startCleanup starts a run for an operator, recorded in the audit log, and returns its report so far.
func startCleanup(ctx context.Context, ps *pasteService, cleanup CleanupRunner, by store.Actor) (store.Run, error) {
	id, err := cleanup.Start("admin", &store.AuditRecord{Actor: by, Action: store.ActionCleanup})
	if err != nil {
		return store.Run{}, err
	}
	return ps.store.Run(ctx, id)
}

// handleCleanupRuns handles GET /admin/cleanup/runs: the latest runs of every replica, newest first.
func handleCleanupRuns(ps *pasteService) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := 50
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				writeProblem(w, r, errBadRequest.withDetail("limit must be a number from 1 to 1000."))
				return
			}
			limit = n
		}
		runs, err := ps.store.Runs(r.Context(), limit)
		if err != nil {
			ps.writeError(w, r, err)
			return
		}
		if runs == nil {
			runs = []store.Run{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"runs": runs})
	})
}

// handleCleanupRun handles GET /admin/cleanup/runs/{id}, live while the run goes.
func handleCleanupRun(ps *pasteService) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
		if err != nil {
			writeProblem(w, r, errRunNotFound.withDetail("Run ids are numbers."))
			return
		}
		run, err := ps.store.Run(r.Context(), id)
		if err == store.ErrNotFound {
			writeProblem(w, r, errRunNotFound.withDetail("There is no cleanup run with this id."))
			return
		}
		if err != nil {
			ps.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, run)
	})
}

// handleCleanupBacklog handles GET /admin/cleanup/backlog: the work waiting for cleanup.
func handleCleanupBacklog(ps *pasteService) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := ps.store.Backlog(r.Context())
		if err != nil {
			ps.writeError(w, r, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, b)
	})
}
