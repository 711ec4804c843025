package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"pastebin/envelope"
)

// TestBrowserMyPastes: /mine lists the pastes this browser created (title, language, size, expiry,
// views left, encrypted), newest first, from the tokens it kept and the metadata API, without
// taking a view of a burn or view-limited paste; it forgets those that are gone, and deletes one
// with one click. Titles are text.
func TestBrowserMyPastes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := newTab(t, e)
	first := createInBrowser(t, b, "fmt.Println(1)\n", `<img src=x onerror="alert('title')">First`, "go", false)
	secret := createInBrowser(t, b, "read me once\n", "Secret", "", true)
	gone := createInBrowser(t, b, "deleted elsewhere\n", "Gone", "", false)
	token := eval[string](b, `JSON.parse(localStorage.getItem("pastebin:token:`+gone+`")).token`)
	if r := e.delete(gone, token); r.StatusCode != http.StatusNoContent {
		t.Fatalf("delete elsewhere: %d", r.StatusCode)
	}
	limited := e.create("three views\n", "?title=Limited&max_views=3&expires_in=1d").code
	body, format, _ := seal(t, envelope.Paste{Title: "Hidden", Text: []byte("sealed\n")}, "")
	encrypted := e.createEncrypted(body, format.String(), "?expires_in=1d")
	// Entries as this browser keeps them, the newest last: a code never created, no code at all, and
	// two pastes made here by other means (the list needs no right token).
	for i, code := range []string{"Zzzzzzzzzz0", "/evil.example/x", limited, encrypted} {
		b.do(chromedp.Evaluate[chromedp.Void](`localStorage.setItem("pastebin:token:` + code + `", JSON.stringify({token: "` + strings.Repeat("Z", 43) +
			`", expires: null, saved: Date.now() + ` + strconv.Itoa(i) + `}))`))
	}

	b.open("/")
	if status := b.load(chromedp.Click(chromedp.CSS(`a[href="/mine"]`))); status != http.StatusOK {
		t.Fatalf("My pastes: %d", status)
	}
	want := "4 pastes created in this browser. 2 pastes that are gone now were forgotten."
	if got := b.waitText("#mine-status", want); got != want {
		t.Fatalf("the page says %q, want %q", got, want)
	}
	rows := eval[[]string](b, `[...document.querySelectorAll("#mine-list li")].map(li => li.dataset.code + ": " + li.querySelector(".mine-main").innerText.replace(/\s+/g, " "))`)
	wantRows := []string{
		encrypted + ": Paste " + encrypted + " " + strconv.Itoa(len(body)) + " bytes expires in 1 day encrypted", // its title is in the ciphertext
		limited + ": Limited 12 bytes expires in 1 day 3 of 3 views left",
		secret + ": Secret 13 bytes expires in 1 day burns after reading", // the dots between are drawn by CSS
		first + `: <img src=x onerror="alert('title')">First go 15 bytes expires in 1 day`,
	}
	if strings.Join(rows, "\n") != strings.Join(wantRows, "\n") {
		t.Errorf("the list shows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}
	if kept := eval[int](b, `Object.keys(localStorage).filter(k => k.startsWith("pastebin:token:")).length`); kept != 4 {
		t.Errorf("%d tokens kept after the list, want the 4 live pastes'", kept)
	}
	b.screenshot("mine")
	b.darkMode(true)
	b.screenshot("mine-dark")
	b.darkMode(false)

	b.do(chromedp.Click(chromedp.CSS(`li[data-code="` + first + `"] .mine-delete`)))
	if got := b.waitText("#mine-status", `Deleted “<img src=x onerror="alert('title')">First”.`); !strings.HasPrefix(got, "Deleted") {
		t.Errorf("after one click on Delete the page says %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll("#mine-list li").length`); n != 3 || e.get("/raw/"+first).StatusCode != http.StatusGone ||
		eval[bool](b, `localStorage.getItem("pastebin:token:`+first+`") !== null`) {
		t.Errorf("after the delete: %d rows, raw %d; want the paste deleted, its row and token gone, 3 rows left", n, e.get("/raw/"+first).StatusCode)
	}
	if r := e.do(e.request(http.MethodPost, "/raw/"+secret, nil)); r.StatusCode != http.StatusOK || r.text() != "read me once\n" {
		t.Errorf("the burn paste after the list: %d %q; want it still unread", r.StatusCode, r.body)
	}
	if r := e.do(e.request(http.MethodPost, "/raw/"+limited, nil)); r.StatusCode != http.StatusOK || r.Header.Get("Paste-Views-Left") != "2" {
		t.Errorf("the view-limited paste after the list: %d, %q views left; want its first view taken now", r.StatusCode, r.Header.Get("Paste-Views-Left"))
	}
	b.clean()
}

// createInBrowser creates a paste from the form, as a person does, so that the page keeps its
// token, and returns its code.
func createInBrowser(t *testing.T, b *tab, content, title, language string, burn bool) string {
	t.Helper()
	b.open("/")
	b.do(chromedp.SetValue(chromedp.CSS("#content"), content), chromedp.SetValue(chromedp.CSS("#title"), title),
		chromedp.SetValue(chromedp.CSS("#language"), language))
	if burn {
		b.do(chromedp.Click(chromedp.CSS("#burn")))
	}
	if status := b.load(chromedp.Click(chromedp.CSS(`button[type=submit]`))); status != http.StatusOK {
		t.Fatalf("create %q: %d", title, status)
	}
	b.do(chromedp.WaitVisible(chromedp.CSS("#token-box")))
	time.Sleep(50 * time.Millisecond) // app.js keeps the token as the page starts
	return strings.TrimPrefix(eval[string](b, `location.pathname`), "/")
}

// TestBrowserMyPastesWithoutJavaScript: without JavaScript the site's link to /mine is hidden, and
// the page says why it cannot list anything.
func TestBrowserMyPastesWithoutJavaScript(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := newTab(t, e)
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	b.open("/")
	if eval[bool](b, `document.querySelector('a[href="/mine"]').offsetParent !== null`) {
		t.Errorf("the link to My pastes shows although the page needs JavaScript")
	}
	if status := b.open("/mine"); status != http.StatusOK || !strings.Contains(b.text("main"), "showing it needs JavaScript") {
		t.Errorf("/mine without JavaScript: %d %q", status, b.text("main"))
	}
	b.screenshot("nojs-mine")
	b.clean()
}
