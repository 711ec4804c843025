package admin

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"pastebin/api/problem"
	"pastebin/api/request"
	"pastebin/api/site"
	"pastebin/store"
)

// The console's sign-in page and its pages of cleanup: the overview, the runs, one run.

// view is what every console page shows around its own content.
type view struct {
	Section string // the current page's link in the navigation
	CSRF    string // the session's form token; empty when nobody is signed in
	Actor   string
	Refresh int // seconds between reloads of a live page without JavaScript; 0: none
	Notice  string
	Error   string
}

// SignedIn reports whether the page is a signed-in operator's.
func (v view) SignedIn() bool { return v.CSRF != "" }

func (c *Console) view(r *http.Request, section string) view {
	s := sessionOf(r)
	if s.secret == nil {
		return view{Section: section}
	}
	return view{Section: section, CSRF: s.csrf(), Actor: s.actor.Name}
}

// render answers a console page in the site's layout.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	c.site.Render(w, r, status, c.pages[name], site.Page{Title: title + " · console", NoIndex: true, Data: data})
}

// failed shows an error that is not the operator's to correct on the form as an error page.
func (c *Console) failed(w http.ResponseWriter, r *http.Request, err error) {
	c.site.ErrorPage(w, r, c.site.Problem(r, err))
}

type signInView struct {
	view
	Next string
}

func (c *Console) renderSignIn(w http.ResponseWriter, r *http.Request, status int, next, problem string) {
	v := signInView{view: view{Section: "sign-in", Error: problem}, Next: next}
	c.render(w, r, status, "signin", "Sign in", v)
}

// HandleSignInPage handles GET /admin/sign-in.
func HandleSignInPage(c *Console) http.Handler {
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
	view
	Backlog  store.Backlog
	Health   []healthItem
	Runs     []runView
	Recent   recentCleanup
	CanRun   bool
	Observed time.Time
}

// Health checks the services a replica needs: "ok" or why not, by name (postgres, redis, s3).
type Health func(context.Context) map[string]string

// HandleOverviewPage handles GET /admin: the backlog, the health of the services, and the last runs.
func HandleOverviewPage(c *Console, s *store.Store, health Health, cleanup CleanupRunner) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		v := overviewView{view: c.view(r, "overview"), Health: healthItems(health(ctx)), CanRun: canRun(cleanup), Observed: time.Now()}
		var err error
		if v.Backlog, err = s.Backlog(ctx); err != nil {
			c.failed(w, r, err)
			return
		}
		runs, err := s.Runs(ctx, 20)
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

func healthItems(checks map[string]string) []healthItem {
	var out []healthItem
	for _, name := range []string{"postgres", "redis", "s3"} {
		out = append(out, healthItem{Name: name, Status: checks[name], OK: checks[name] == "ok"})
	}
	return out
}

func canRun(cleanup CleanupRunner) bool { return cleanup != nil && cleanup.Workers() > 0 }

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
	view
	Runs   []runView
	CanRun bool
}

// HandleRunsPage handles GET /admin/runs: the latest runs of every replica.
func HandleRunsPage(c *Console, s *store.Store, cleanup CleanupRunner) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs, err := s.Runs(r.Context(), 50)
		if err != nil {
			c.failed(w, r, err)
			return
		}
		c.render(w, r, http.StatusOK, "runs", "Cleanup runs", runsView{view: c.view(r, "runs"), Runs: runViews(runs), CanRun: canRun(cleanup)})
	})
}

// HandleRunStart handles POST /admin/runs, the "run cleanup now" button: the run's page follows.
func HandleRunStart(c *Console, cleanup CleanupRunner) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !canRun(cleanup) {
			c.site.ErrorPage(w, r, problem.CleanupDisabled.WithDetail("This process runs no cleanup workers (PASTEBIN_CLEANUP_WORKERS=0)."))
			return
		}
		id, err := cleanup.Start("admin", &store.AuditRecord{Actor: sessionOf(r).actor, Action: store.ActionCleanup})
		if err != nil {
			c.failed(w, r, err)
			return
		}
		http.Redirect(w, r, "/admin/runs/"+strconv.FormatInt(id, 10), http.StatusSeeOther)
	})
}

type runPageView struct {
	view
	Run runView
}

// HandleRunPage handles GET /admin/runs/{id}: one run's counters. While it runs, the page's script
// follows it by asking this address for JSON every second; without JavaScript the page reloads.
func HandleRunPage(c *Console, s *store.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run, err := readRun(r, s)
		switch {
		case err != nil && request.WantsJSON(r):
			problem.Write(w, r, c.site.Problem(r, err))
		case err != nil:
			c.failed(w, r, err)
		case request.WantsJSON(r):
			w.Header().Set("Cache-Control", "no-store")
			problem.WriteJSON(w, http.StatusOK, run)
		default:
			v := runPageView{view: c.view(r, "runs"), Run: runView{run}}
			if v.Run.Live() {
				v.Refresh = 2
			}
			c.render(w, r, http.StatusOK, "run", "Run "+strconv.FormatInt(run.ID, 10), v)
		}
	})
}

// readRun reads the cleanup run the request's {id} names.
func readRun(r *http.Request, s *store.Store) (store.Run, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		return store.Run{}, problem.RunNotFound.WithDetail("Run ids are numbers.")
	}
	run, err := s.Run(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Run{}, problem.RunNotFound.WithDetail("There is no cleanup run with this id.")
	}
	return run, err
}
