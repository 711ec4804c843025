package api_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// These tests drive a real headless Chromium through the pages, as a person would. make test
// installs Debian's chromium first (scripts/ensure-chromium.sh); without it they fail, never skip.
// Each run saves screenshots of the main pages in artifacts/screenshots, for a person to look at.

const browserTimeout = 2 * time.Minute

// tab is one page of a fresh Chromium, with everything the page did that a test must notice:
// dialogs (alert, confirm), uncaught exceptions, and Content-Security-Policy violations.
type tab struct {
	t        *testing.T
	ctx      context.Context
	base     string
	mu       sync.Mutex
	dialogs  []string
	problems []string
}

func chromiumPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PASTEBIN_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no Chromium at %s (%v): run scripts/ensure-chromium.sh, as make test does, or set PASTEBIN_CHROMIUM", path, err)
	}
	return path
}

// newTab starts Chromium with a fresh profile, bounded in time, and opens a tab on e's server.
// extra are more of Chromium's options.
func newTab(t *testing.T, e *env, extra ...chromedp.ExecAllocatorOption) *tab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	actx, acancel := chromedp.NewExecAllocator(ctx, append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.WindowSize(1280, 900),
	}, extra...)...)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() { bcancel(); acancel(); cancel() })
	b := &tab{t: t, ctx: bctx, base: e.srv.URL}
	if err := chromedp.Listen(bctx, b.record); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return b
}

// record notes what the page did; it runs on the tab's reader goroutine, so it only appends.
func (b *tab) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		b.dialogs = append(b.dialogs, string(ev.Type)+": "+ev.Message)
		go func() { // a dialog blocks the page; dismiss it from another goroutine
			_, _ = chromedp.Call(b.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}()
	case *runtime.EventExceptionThrown:
		b.problems = append(b.problems, "exception: "+ev.ExceptionDetails.Text+exceptionDetail(ev.ExceptionDetails))
	case *log.EventEntryAdded:
		if strings.Contains(ev.Entry.Text, "Content Security Policy") {
			b.problems = append(b.problems, "CSP: "+ev.Entry.Text)
		}
	}
}

func exceptionDetail(d *runtime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		return " " + d.Exception.Description
	}
	return ""
}

// clean fails the test if the page opened a dialog, threw, or broke its CSP.
func (b *tab) clean() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range b.dialogs {
		b.t.Errorf("a dialog opened: %s", d)
	}
	for _, p := range b.problems {
		b.t.Errorf("the page had a problem: %s", p)
	}
}

func (b *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// load runs actions that navigate (a click, a submit) and returns the status of the new page.
func (b *tab) load(actions ...chromedp.Action[chromedp.Void]) int64 {
	b.t.Helper()
	resp, err := chromedp.RunResponse(b.ctx, actions...)
	if err != nil {
		b.t.Fatalf("browser: %v", err)
	}
	return resp.Status
}

func (b *tab) open(path string) int64 {
	b.t.Helper()
	return b.load(chromedp.Navigate(b.base + path))
}

func eval[T any](b *tab, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %.60q: %v", js, err)
	}
	return v
}

func (b *tab) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// waitText waits a little for the element's text to become want, as after an asynchronous
// handler, and returns the text it last saw.
func (b *tab) waitText(sel, want string) string {
	b.t.Helper()
	got := b.text(sel)
	for deadline := time.Now().Add(5 * time.Second); got != want && time.Now().Before(deadline); got = b.text(sel) {
		time.Sleep(50 * time.Millisecond)
	}
	return got
}

// waitValue is waitText for a form field's value.
func (b *tab) waitValue(sel, want string) string {
	b.t.Helper()
	value := func() string { return eval[string](b, `document.querySelector("`+sel+`").value`) }
	got := value()
	for deadline := time.Now().Add(5 * time.Second); got != want && time.Now().Before(deadline); got = value() {
		time.Sleep(50 * time.Millisecond)
	}
	return got
}

// textContent is the text of an element as it is, where text gives it as rendered.
func (b *tab) textContent(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func (b *tab) darkMode(on bool) {
	b.t.Helper()
	scheme := "light"
	if on {
		scheme = "dark"
	}
	_, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
	})
	if err != nil {
		b.t.Fatalf("emulate %s mode: %v", scheme, err)
	}
}

// screenshot saves the whole page as artifacts/screenshots/<name>.png, at the repository root.
func (b *tab) screenshot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join("..", "artifacts", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func (b *tab) sawDialog(msg string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range b.dialogs {
		if strings.HasSuffix(d, msg) {
			return true
		}
	}
	return false
}
