package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"pastebin/store"
	"pastebin/store/storetest"
)

// TestBrowserConsole drives the operators' console in Chromium as an operator would: sign in (a
// wrong token first), run cleanup and watch the run's page follow it to its end without a reload,
// take a paste down and see its page answer 410, block content and see the create form refused,
// and read the audit log. Screenshots of every page land in artifacts/screenshots/console-*.
func TestBrowserConsole(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 2))
	b := newTab(t, e)

	if status := b.open("/admin"); status != http.StatusOK || !strings.HasSuffix(eval[string](b, `location.pathname`), "/admin/sign-in") {
		t.Fatalf("/admin without a session: %d at %s, want the sign-in form", status, eval[string](b, `location.pathname`))
	}
	b.do(chromedp.SendKeys(chromedp.CSS("#token"), "not the admin token"))
	if status := b.load(chromedp.Click(chromedp.CSS("#sign-in"))); status != http.StatusUnauthorized || !strings.Contains(b.text("#form-error"), "not the admin token") {
		t.Fatalf("a wrong token: %d", status)
	}
	b.screenshot("console-sign-in")
	b.do(chromedp.SendKeys(chromedp.CSS("#token"), adminToken))
	if status := b.load(chromedp.Click(chromedp.CSS("#sign-in"))); status != http.StatusOK || b.text("h1") != "Overview" {
		t.Fatalf("sign in: %d, page %q", status, b.text("h1"))
	}
	if eval[bool](b, `document.cookie.includes("pastebin_admin")`) {
		t.Errorf("scripts can read the session cookie")
	}

	watchRun(t, e, b)
	b.open("/admin")
	b.screenshot("console-overview")
	b.darkMode(true)
	b.screenshot("console-overview-dark")
	b.darkMode(false)

	p := e.create("reported to the operators", "")
	b.open("/admin/takedown")
	b.do(chromedp.SendKeys(chromedp.CSS("#code"), e.srv.URL+"/"+p.code), chromedp.SendKeys(chromedp.CSS("#reason"), "abuse report #4711"))
	if status := b.load(chromedp.Click(chromedp.CSS("#takedown-submit"))); status != http.StatusOK || !strings.Contains(b.text("#notice"), "taken down") {
		t.Fatalf("takedown form: %d", status)
	}
	b.screenshot("console-takedown")
	if status := b.open("/" + p.code); status != http.StatusGone || !strings.Contains(b.text("main"), "took this paste down") {
		t.Errorf("the paste's page after the takedown: %d %q", status, b.text("main"))
	}
	b.screenshot("console-paste-taken-down")

	blockFromConsole(t, e, b)

	b.open("/admin/audit")
	if got := eval[int](b, `document.querySelectorAll("#audit-list tbody tr").length`); got != 4 {
		t.Errorf("the audit page lists %d actions, want sign-in, cleanup, takedown and block", got)
	}
	b.screenshot("console-audit")
	if status := b.load(chromedp.Click(chromedp.CSS("#sign-out"))); status != http.StatusOK || b.text("h1") != "Operators' console" {
		t.Errorf("sign out: %d, page %q", status, b.text("h1"))
	}
	b.clean()
}

// watchRun starts a run from the overview's button while a transaction holds the content rows, so
// the run cannot finish its first batch: its page shows it going. Then the rows are let go, and
// the page's script must follow the run to its end in the same document.
func watchRun(t *testing.T, e *env, b *tab) {
	t.Helper()
	ctx := context.Background()
	if _, err := storetest.Seed(ctx, e.store.Pool(), storetest.SeedSpec{Pastes: 3000, Expired: 2000, Shared: 0.5, Tag: "W"}); err != nil {
		t.Fatal(err)
	}
	hold, err := e.store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, `SELECT 1 FROM content FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	if status := b.load(chromedp.Click(chromedp.CSS("#run-now"))); status != http.StatusOK {
		t.Fatalf("run now: %d", status)
	}
	if got := b.text(`[data-field="status"]`); got != "running" {
		t.Fatalf("the run's page shows %q while its batches wait, want running", got)
	}
	eval[bool](b, `window.sameDocument = true`)
	b.screenshot("console-run-live")
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.waitTextLong(`[data-field="status"]`, "finished"); got != "finished" {
		t.Fatalf("the run's page shows %q, want it to follow the run to finished", got)
	}
	if !eval[bool](b, `window.sameDocument === true`) {
		t.Errorf("the page reloaded: its script should have followed the run")
	}
	if got := b.text(`[data-field="tombstoned"]`); got != "2000" {
		t.Errorf("the page shows %s tombstoned, want 2000", got)
	}
	b.screenshot("console-run-finished")
}

// blockFromConsole blocks a paste's content on the blocked page, then tries to create it again
// with the public form: the browser is answered 451 and nothing is stored.
func blockFromConsole(t *testing.T, e *env, b *tab) {
	t.Helper()
	const content = "content nobody may paste again"
	p := e.create(content, "")
	b.open("/admin/blocked")
	b.do(chromedp.SendKeys(chromedp.CSS("#target"), p.code), chromedp.SendKeys(chromedp.CSS("#block-reason"), "malware"))
	if status := b.load(chromedp.Click(chromedp.CSS("#block-submit"))); status != http.StatusOK || !strings.Contains(b.text("#notice"), "1 paste taken down") {
		t.Fatalf("block form: %d", status)
	}
	if got := eval[int](b, `document.querySelectorAll("#blocked-list tbody tr").length`); got != 1 {
		t.Errorf("the blocked list has %d rows, want 1", got)
	}
	b.screenshot("console-blocked")
	pastes := e.count(`SELECT count(*) FROM pastes`)
	b.open("/")
	b.do(chromedp.SendKeys(chromedp.CSS("#content"), content))
	if status := b.load(chromedp.Click(chromedp.CSS(`button[type=submit]`))); status != http.StatusUnavailableForLegalReasons {
		t.Errorf("creating blocked content from the form: %d, want 451", status)
	}
	if !strings.Contains(b.text("main"), "blocked") {
		t.Errorf("the refusal page says %q", b.text("main"))
	}
	b.screenshot("console-create-blocked")
	if n := e.count(`SELECT count(*) FROM pastes`); n != pastes {
		t.Errorf("a refused create stored a paste: %d pastes, then %d", pastes, n)
	}
}

// waitTextLong is waitText for something a loaded machine may take a while to do (a cleanup run).
func (b *tab) waitTextLong(sel, want string) string {
	b.t.Helper()
	got := b.text(sel)
	for deadline := time.Now().Add(time.Minute); got != want && time.Now().Before(deadline); got = b.text(sel) {
		time.Sleep(100 * time.Millisecond)
	}
	return got
}

// TestBrowserConsoleShowsThePacing: a run's page says how the deployment's drain is paced, the
// signal and the aim the controller holds it under, and its script, which follows a running run,
// says it as the server does.
func TestBrowserConsoleShowsThePacing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 2))
	b := newTab(t, e)
	signIn(t, b)
	ctx := context.Background()
	id, err := e.store.StartRun(ctx, "test", "replica-1", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	rate := 1200.0
	report := func(reason string, signal float64, finish bool) {
		t.Helper()
		st := store.RunState{Pacing: store.RunPacing{Mode: "auto", RateLimit: &rate, Reason: reason, Signal: signal,
			Aim: 1.44, Source: "users", Controller: "replica-1"}}
		if err := e.store.UpdateRun(ctx, id, st, finish); err != nil {
			t.Fatal(err)
		}
	}
	report("at_budget", 1.38, false)
	b.open(fmt.Sprintf("/admin/runs/%d", id))
	if got, want := b.text(`[data-field="pacing"]`), "auto, 1200 pastes/s: at budget, users' p99 1.38× before (aim 1.44×)"; got != want {
		t.Errorf("the run's page says %q, want %q", got, want)
	}
	// What the script writes now is its own reading of the run's JSON, in the same document.
	eval[bool](b, `window.sameDocument = true`)
	report("over_budget", 1.52, true)
	const followed = "auto, 1200 pastes/s: over budget, users' p99 1.52× before (aim 1.44×)"
	if got := b.waitText(`[data-field="pacing"]`, followed); got != followed {
		t.Errorf("the page's script says %q, want %q", got, followed)
	}
	if got := b.waitText(`[data-field="status"]`, "finished"); got != "finished" || !eval[bool](b, `window.sameDocument === true`) {
		t.Errorf("the run's page shows %q, want finished, without a reload", got)
	}
	b.clean()
}
