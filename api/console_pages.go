package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"pastebin/store"
)

// consoleView is what every console page shows around its own content.
type consoleView struct {
	Section string // the current page's link in the navigation
	CSRF    string // the session's form token; empty when nobody is signed in
	Actor   string
	Refresh int // seconds between reloads of a live page without JavaScript; 0: none
	Notice  string
	Error   string
}

// SignedIn reports whether the page is a signed-in operator's.
func (v consoleView) SignedIn() bool { return v.CSRF != "" }

func (c *console) view(r *http.Request, section string) consoleView {
	s := sessionOf(r)
	if s.secret == nil {
		return consoleView{Section: section}
	}
	return consoleView{Section: section, CSRF: s.csrf(), Actor: s.actor.Name}
}

// render answers a console page in the site's layout.
func (c *console) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	c.web.render(w, r, status, "admin-"+name, page{Title: title + " · console", NoIndex: true, Data: data})
}

// failed shows an error that is not the operator's to correct on the form as an error page.
func (c *console) failed(w http.ResponseWriter, r *http.Request, err error) {
	c.web.errorPage(w, r, asProblem(r, c.ps.logger, err))
}

type signInView struct {
	consoleView
	Next string
}

func (c *console) renderSignIn(w http.ResponseWriter, r *http.Request, status int, next, problem string) {
	v := signInView{consoleView: consoleView{Section: "sign-in", Error: problem}, Next: next}
	c.render(w, r, status, "signin", "Sign in", v)
}

// handleSignInPage handles GET /admin/sign-in.
func (c *console) handleSignInPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next := safeNext(r.URL.Query().Get("next"))
		if _, err := c.session(r); err == nil {
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		c.renderSignIn(w, r, http.StatusOK, next, "")
	})
}

type overviewView struct {
	consoleView
	Backlog  store.Backlog
	Health   []healthItem
	Runs     []runView
	Recent   recentCleanup
	CanRun   bool
	Observed time.Time
}

// handleOverview handles GET /admin: the backlog, the health of the services, and the last runs.
func (c *console) handleOverview() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		v := overviewView{consoleView: c.view(r, "overview"), Health: c.checkHealth(ctx), CanRun: c.canRun(), Observed: time.Now()}
		var err error
		if v.Backlog, err = c.ps.store.Backlog(ctx); err != nil {
			c.failed(w, r, err)
			return
		}
		runs, err := c.ps.store.Runs(ctx, 20)
		if err != nil {
			c.failed(w, r, err)
			return
		}
		v.Recent = summarize(runs, time.Now().Add(-24*time.Hour))
		v.Runs = runViews(runs[:min(5, len(runs))])
		c.render(w, r, http.StatusOK, "overview", "Overview", v)
	})
}

// OldestAge says how long ago the oldest paste not cleaned yet expired.
func (v overviewView) OldestAge() string { return ago(v.Observed, v.Backlog.Oldest) }

// OutboxAge says how long the oldest blob in the outbox has waited.
func (v overviewView) OutboxAge() string { return ago(v.Observed, v.Backlog.OutboxOldest) }

func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

// healthItem is one service's state.
type healthItem struct {
	Name, Status string
	OK           bool
}

func (c *console) checkHealth(ctx context.Context) []healthItem {
	checks := checkReadiness(ctx, c.health)
	var out []healthItem
	for _, name := range []string{"postgres", "redis", "s3"} {
		out = append(out, healthItem{Name: name, Status: checks[name], OK: checks[name] == "ok"})
	}
	return out
}

func (c *console) canRun() bool { return c.cleanup != nil && c.cleanup.Workers() > 0 }

// recentCleanup is what the runs since a moment did, and at what rate.
type recentCleanup struct {
	Runs       int
	Tombstoned int64
	Rate       string
}

func summarize(runs []store.Run, since time.Time) recentCleanup {
	var rc recentCleanup
	var seconds float64
	for _, r := range runs {
		if r.StartedAt.Before(since) {
			continue
		}
		rc.Runs++
		rc.Tombstoned += r.Tombstoned
		seconds += r.Duration
	}
	rc.Rate = perSecond(rc.Tombstoned, seconds)
	return rc
}

func perSecond(n int64, seconds float64) string {
	if seconds <= 0 {
		return "–"
	}
	return strconv.FormatFloat(float64(n)/seconds, 'f', 0, 64) + " pastes/s"
}

// runView is a run as the console shows it.
type runView struct{ store.Run }

func runViews(runs []store.Run) []runView {
	out := make([]runView, len(runs))
	for i, r := range runs {
		out[i] = runView{r}
	}
	return out
}

// Rate is the run's pastes tombstoned per second so far.
func (v runView) Rate() string { return perSecond(v.Tombstoned, v.Duration) }

// Took is the run's duration so far, rounded for people.
func (v runView) Took() string {
	return (time.Duration(v.Duration * float64(time.Second))).Round(100 * time.Millisecond).String()
}

// Started is when the run started, for people.
func (v runView) Started() string { return v.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC") }

// Live reports whether the run is still going.
func (v runView) Live() bool { return v.Status == "running" }

type runsView struct {
	consoleView
	Runs   []runView
	CanRun bool
}

// handleRunsPage handles GET /admin/runs: the latest runs of every replica.
func (c *console) handleRunsPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs, err := c.ps.store.Runs(r.Context(), 50)
		if err != nil {
			c.failed(w, r, err)
			return
		}
		c.render(w, r, http.StatusOK, "runs", "Cleanup runs", runsView{consoleView: c.view(r, "runs"), Runs: runViews(runs), CanRun: c.canRun()})
	})
}

// handleRunStart handles POST /admin/runs, the "run cleanup now" button: the run's page follows.
func (c *console) handleRunStart() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.canRun() {
			c.web.errorPage(w, r, errCleanupDisabled.withDetail("This process runs no cleanup workers (PASTEBIN_CLEANUP_WORKERS=0)."))
			return
		}
		run, err := startCleanup(r.Context(), c.ps, c.cleanup, sessionOf(r).actor)
		if err != nil {
			c.failed(w, r, err)
			return
		}
		http.Redirect(w, r, "/admin/runs/"+strconv.FormatInt(run.ID, 10), http.StatusSeeOther)
	})
}

type runPageView struct {
	consoleView
	Run runView
}

// handleRunPage handles GET /admin/runs/{id}: one run's counters. While it runs, the page's script
// follows it by asking this address for JSON every second; without JavaScript the page reloads.
func (c *console) handleRunPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
		if err != nil {
			c.web.errorPage(w, r, errRunNotFound.withDetail("Run ids are numbers."))
			return
		}
		run, err := c.ps.store.Run(r.Context(), id)
		if errors.Is(err, store.ErrNotFound) {
			err = errRunNotFound.withDetail("There is no cleanup run with this id.")
		}
		switch {
		case err != nil && wantsJSON(r):
			writeProblem(w, r, asProblem(r, c.ps.logger, err))
		case err != nil:
			c.failed(w, r, err)
		case wantsJSON(r):
			w.Header().Set("Cache-Control", "no-store")
			writeJSON(w, http.StatusOK, run)
		default:
			v := runPageView{consoleView: c.view(r, "runs"), Run: runView{run}}
			if v.Run.Live() {
				v.Refresh = 2
			}
			c.render(w, r, http.StatusOK, "run", "Run "+strconv.FormatInt(id, 10), v)
		}
	})
}
