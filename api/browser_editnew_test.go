package api_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestBrowserEditAsNew: "Edit as new" on a paste's page opens the form filled with the paste,
// with JavaScript and without; the text edited and submitted makes a new paste with the same
// title, language and file name, and the first stays as it was.
func TestBrowserEditAsNew(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create(goSource, "?title=Hello&language=go&filename=hello.go")
	for _, script := range []bool{true, false} {
		b := newTab(t, e)
		if !script {
			if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
				t.Fatal(err)
			}
		}
		b.open("/" + p.code)
		if status := b.load(chromedp.Click(chromedp.CSS("#edit-as-new"))); status != http.StatusOK {
			t.Fatalf("script %v: edit as new: %d", script, status)
		}
		got := eval[[]string](b, `["#content", "#title", "#language", "#filename", "#expires_in"].map(s => document.querySelector(s).value)`)
		if want := []string{goSource, "Hello", "go", "hello.go", "1d"}; !slices.Equal(got, want) {
			t.Errorf("script %v: the form holds %q, want %q", script, got, want)
		}
		if script {
			b.screenshot("edit-as-new")
			b.darkMode(true)
			b.screenshot("edit-as-new-dark")
			b.darkMode(false)
		}
		b.do(chromedp.SetValue(chromedp.CSS("#content"), goSource+"// edited\n"))
		if status := b.load(chromedp.Click(chromedp.CSS(`button[type=submit]`))); status != http.StatusOK {
			t.Fatalf("script %v: create: %d", script, status)
		}
		code := regexp.MustCompile(`^/([0-9A-Za-z]{11})$`).FindStringSubmatch(eval[string](b, `location.pathname`))
		if code == nil || code[1] == p.code {
			t.Fatalf("script %v: after the create the browser is at %s, want a new paste", script, eval[string](b, `location.pathname`))
		}
		var meta struct{ Title, Language, Filename string }
		_ = json.Unmarshal(e.get("/api/v1/pastes/"+code[1]).body, &meta)
		if e.get("/raw/"+code[1]).text() != goSource+"// edited\n" || meta.Title != "Hello" || meta.Language != "go" || meta.Filename != "hello.go" {
			t.Errorf("script %v: the new paste is %+v, %q", script, meta, e.get("/raw/"+code[1]).text())
		}
		b.clean()
	}
	if e.get("/raw/"+p.code).text() != goSource {
		t.Errorf("the first paste changed")
	}
}
