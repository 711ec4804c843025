package api_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// End-to-end tests in a real headless Chromium: see browserharness_test.go for how it is driven.

const goSource = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"<b>hello</b> & bye\")\n}\n"

// The whole life of a paste in a browser with JavaScript: create it from the form with the
// keyboard, see it highlighted, copy its link, open it raw, delete it with the token this browser
// kept, and see the 410 page.
func TestBrowserPasteLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := newTab(t, e)
	b.open("/")
	b.do(chromedp.WaitVisible(chromedp.CSS("#content")))
	b.screenshot("form")
	b.darkMode(true)
	b.screenshot("form-dark")
	b.darkMode(false)

	// Typed as a person would: the Tab key must put a tab in the text, not move the focus.
	typed := strings.ReplaceAll(goSource, "\t", "") // the Tab key is pressed on its own below
	first, rest, _ := strings.Cut(typed, "fmt.Println")
	b.do(chromedp.SendKeys(chromedp.CSS("#content"), first), chromedp.KeyEvent("\t"),
		chromedp.SendKeys(chromedp.CSS("#content"), "fmt.Println"+rest),
		chromedp.SendKeys(chromedp.CSS("#title"), "Hello <i>world</i>"),
		chromedp.Focus(chromedp.CSS("#content")))
	if got := eval[string](b, `document.querySelector("#content").value`); got != goSource {
		t.Fatalf("the text area holds %q, want %q", got, goSource)
	}
	// Esc, then Tab, leaves the text area: no keyboard trap.
	b.do(chromedp.KeyEvent(kb.Escape), chromedp.KeyEvent("\t"))
	if got := eval[string](b, `document.activeElement.id`); got != "expires_in" {
		t.Errorf("Esc then Tab moved the focus to %q, want the expiry menu", got)
	}
	if status := b.load(chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl))); status != 200 {
		t.Fatalf("Ctrl+Enter led to a %d page", status)
	}
	b.do(chromedp.WaitVisible(chromedp.CSS("#code")))
	loc := eval[string](b, `location.pathname`)
	code := regexp.MustCompile(`^/([0-9A-Za-z]{11})$`).FindStringSubmatch(loc)
	if code == nil {
		t.Fatalf("after create the browser is at %s, want /<code>", loc)
	}

	checkCreatedPage(t, b, code[1])
	b.screenshot("paste-light")
	b.darkMode(true)
	if bg := eval[string](b, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(13, 17, 23)" {
		t.Errorf("dark mode background %s, want rgb(13, 17, 23)", bg)
	}
	b.screenshot("paste-dark")
	b.darkMode(false)

	checkCopyLink(t, b, e.srv.URL+"/"+code[1])
	if status := b.load(chromedp.Click(chromedp.CSS("#raw"))); status != 200 {
		t.Fatalf("raw: %d", status)
	}
	if got := eval[string](b, `document.body.innerText`); got != goSource {
		t.Errorf("raw shows %q", got)
	}
	if status := b.open("/" + code[1]); status != 200 {
		t.Fatalf("back to the paste: %d", status)
	}
	if eval[bool](b, `!!document.querySelector("#token-box")`) {
		t.Errorf("the token is shown a second time")
	}
	deleteWithStoredToken(t, b, code[1])
	if r := e.get("/raw/" + code[1]); r.StatusCode != http.StatusGone {
		t.Errorf("raw after the delete: %d, want 410", r.StatusCode)
	}
	b.clean()
}

// checkCreatedPage checks the page right after the create: the token shown once and kept,
// highlighting, linkable line numbers that a copy leaves out.
func checkCreatedPage(t *testing.T, b *tab, code string) {
	t.Helper()
	token := eval[string](b, `document.querySelector("#token").value`)
	if len(token) != 43 || !strings.Contains(b.text("#token-box"), "will not be shown again") {
		t.Errorf("token %q, box %q: want the token with its warning", token, b.text("#token-box"))
	}
	stored := eval[string](b, `JSON.parse(localStorage.getItem("pastebin:token:`+code+`")).token`)
	if stored != token {
		t.Errorf("localStorage holds %q, want the token", stored)
	}
	if h1 := b.text("h1"); h1 != "Hello <i>world</i>" {
		t.Errorf("title %q", h1)
	}
	kw := eval[[]string](b, `[...document.querySelectorAll("#code .kd, #code .kn")].map(e => e.textContent)`)
	if strings.Join(kw, " ") != "package import func" {
		t.Errorf("highlighted keywords %q, want package import func", kw)
	}
	if eval[string](b, `getComputedStyle(document.querySelector("#code .kd")).color`) ==
		eval[string](b, `getComputedStyle(document.querySelector("#code .nx, #code .n")).color`) {
		t.Errorf("keywords and names have the same colour: the highlighting styles did not apply")
	}
	// What a person copies after selecting the code: the text, without the line numbers. (The
	// selection drops the very last line break, as it does for any block.)
	selected := eval[string](b, `(() => { const r = document.createRange(); r.selectNodeContents(document.querySelector("#code"));
		const s = getSelection(); s.removeAllRanges(); s.addRange(r); const text = s.toString(); s.removeAllRanges(); return text; })()`)
	if selected != strings.TrimSuffix(goSource, "\n") {
		t.Errorf("selecting the code gives %q, want the paste without line numbers", selected)
	}
	b.do(chromedp.Click(chromedp.CSS(`#L6 .ln`)))
	if got := eval[string](b, `location.hash + " " + document.querySelector(":target").id`); got != "#L6 L6" {
		t.Errorf("clicking line number 6 gives %q", got)
	}
	if exp := b.text("time[data-relative]"); exp != "in 1 day" {
		t.Errorf("expiry shown as %q, want in 1 day", exp)
	}
}

func checkCopyLink(t *testing.T, b *tab, want string) {
	t.Helper()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		_, err := chromedp.CallBrowser(b.ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: name}, Setting: browser.PermissionSettingGranted, Origin: b.base,
		})
		if err != nil {
			t.Fatalf("grant %s: %v", name, err)
		}
	}
	b.do(chromedp.Click(chromedp.CSS(`button[data-copy="#link"]`)))
	if got := b.waitText(`button[data-copy="#link"]`, "Copied"); got != "Copied" {
		t.Errorf("the copy button says %q", got)
	}
	if got := b.waitText("#announce", "Copied to the clipboard."); got != "Copied to the clipboard." {
		t.Errorf("screen readers are told %q", got)
	}
	if got := eval[string](b, `navigator.clipboard.readText()`); got != want {
		t.Errorf("clipboard %q, want %q", got, want)
	}
}

func deleteWithStoredToken(t *testing.T, b *tab, code string) {
	t.Helper()
	b.do(chromedp.Click(chromedp.CSS("#delete summary")), chromedp.WaitVisible(chromedp.CSS(".has-token")))
	if eval[bool](b, `document.querySelector("#delete-token").offsetParent !== null`) {
		t.Errorf("the token field is shown although this browser has the token")
	}
	b.screenshot("paste-delete")
	if status := b.load(chromedp.Click(chromedp.CSS("#delete-submit"))); status != http.StatusGone {
		t.Errorf("after delete the page answers %d, want 410", status)
	}
	if h1 := b.text("h1"); h1 != "This paste is gone" || !strings.Contains(b.text("main"), "deleted by its owner") {
		t.Errorf("410 page: %q / %q", h1, b.text("main"))
	}
	if eval[bool](b, `localStorage.getItem("pastebin:token:`+code+`") !== null`) {
		t.Errorf("the token of a deleted paste is still kept")
	}
	b.screenshot("gone-410")
}

// Without JavaScript, create and view work with plain forms and redirects, and so do delete
// (with the token typed in) and a burn-after-reading paste, which only a confirmation takes.
func TestBrowserWithoutJavaScript(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := newTab(t, e)
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	b.open("/")
	b.do(chromedp.SendKeys(chromedp.CSS("#content"), "no script here\n"))
	if status := b.load(chromedp.Click(chromedp.CSS(`button[type=submit]`))); status != 200 {
		t.Fatalf("submit: %d", status)
	}
	if eval[bool](b, `document.documentElement.classList.contains("js")`) {
		t.Fatalf("the page script ran: this test is not without JavaScript")
	}
	token := eval[string](b, `document.querySelector("#token").value`)
	if got := b.textContent("#code"); got != "no script here\n" || len(token) != 43 {
		t.Fatalf("page shows %q and token %q", got, token)
	}
	if eval[bool](b, `document.querySelector("button[data-copy]").offsetParent !== null`) {
		t.Errorf("copy buttons show although they need JavaScript")
	}
	b.screenshot("nojs-paste")
	b.do(chromedp.Click(chromedp.CSS("#delete summary")), chromedp.SendKeys(chromedp.CSS("#delete-token"), token))
	b.darkMode(true)
	b.screenshot("nojs-delete-dark")
	b.darkMode(false)
	if status := b.load(chromedp.Click(chromedp.CSS("#delete-submit"))); status != http.StatusGone {
		t.Errorf("after the delete form: %d, want 410", status)
	}

	burn := e.create("read me once", "?burn=true")
	b.open("/" + burn.code)
	if strings.Contains(b.text("main"), "read me once") || e.get("/api/v1/pastes/"+burn.code).StatusCode != 200 {
		t.Fatalf("opening the page of a burning paste showed or burned it")
	}
	b.screenshot("burn-confirm")
	if action := eval[string](b, `document.querySelector("#burn-open").form.action`); action != e.srv.URL+"/"+burn.code {
		t.Errorf("the button posts to %s, want the paste's own URL", action)
	}
	if status := b.load(chromedp.Click(chromedp.CSS("#burn-open"))); status != 200 || b.textContent("#code") != "read me once" {
		t.Fatalf("confirming: %d, content %q", status, b.textContent("#code"))
	}
	if status := b.open("/" + burn.code); status != http.StatusGone {
		t.Errorf("the burned paste's page: %d, want 410", status)
	}
	b.clean()
}

// A paste of HTML and script shows as text and runs nothing: no dialog opens and no script of the
// paste executes, on its page or raw.
func TestBrowserXSS(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	evil := "<script>window.pwned = 1; alert('script')</script>\n" +
		"<img src=x onerror=\"window.pwned = 2; alert('img')\">\n" +
		"<svg onload=\"window.pwned = 3; alert('svg')\"></svg></code></pre><script>alert('break out')</script>\n"
	title := `<script>alert("title")</script>`
	p := e.create(evil, "?language=html&title="+strings.ReplaceAll(title, " ", "%20"))
	b := newTab(t, e)
	b.open("/" + p.code)
	b.do(chromedp.WaitVisible(chromedp.CSS("#code")))
	time.Sleep(300 * time.Millisecond) // let an injected onerror or onload fire, if there were one
	if got := eval[string](b, `String(window.pwned)`); got != "undefined" {
		t.Errorf("a script of the paste ran: window.pwned = %s", got)
	}
	if n := eval[int](b, `document.querySelectorAll("main script, main img, main svg").length`); n != 0 {
		t.Errorf("%d elements of the paste became markup", n)
	}
	if got := b.textContent("#code"); got != evil || b.text("h1") != title {
		t.Errorf("the paste is not shown as text: %q, title %q", got, b.text("h1"))
	}
	b.screenshot("xss-as-text")
	b.open("/raw/" + p.code)
	time.Sleep(300 * time.Millisecond)
	if got := eval[string](b, `String(window.pwned)`); got != "undefined" {
		t.Errorf("raw ran a script of the paste: window.pwned = %s", got)
	}
	b.clean()

	// The dialog check must be able to see a dialog, or it proves nothing. (On the page: raw's
	// sandbox forbids dialogs altogether.)
	b.open("/" + p.code)
	b.do(chromedp.Evaluate[chromedp.Void](`setTimeout(() => alert("probe"), 0)`))
	deadline := time.Now().Add(5 * time.Second)
	for !b.sawDialog("probe") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !b.sawDialog("probe") {
		t.Errorf("a dialog opened by the test itself was not seen: the XSS check is blind")
	}
}

// On a phone's width nothing overflows sideways except the code itself, which scrolls.
func TestBrowserPhone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create(goSource+"// "+strings.Repeat("a long line that must scroll, not widen the page ", 4)+"\n", "?title=On%20a%20phone")
	b := newTab(t, e)
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	b.open("/")
	b.do(chromedp.Evaluate[chromedp.Void](`localStorage.setItem("pastebin:token:` + p.code + `", JSON.stringify({token: "` + p.token + `", expires: null, saved: Date.now()}))`))
	for _, page := range []struct{ path, shot string }{
		{"/", "phone-form"}, {"/" + p.code, "phone-paste"}, {"/?from=" + p.code, "phone-edit-as-new"}, {"/mine", "phone-mine"},
		{"/AAAAAAAAAAA", "phone-404"},
	} {
		b.open(page.path)
		if page.path == "/mine" {
			b.do(chromedp.WaitVisible(chromedp.CSS(`li[data-code="` + p.code + `"]`)))
		}
		b.screenshot(page.shot)
		if page.shot == "phone-paste" {
			// The delete panel is the widest thing on the page: it must fit too.
			b.do(chromedp.Click(chromedp.CSS("#delete summary")))
			b.screenshot("phone-paste-delete")
		}
		if w := eval[int](b, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
			t.Errorf("%s is %dpx wider than the phone", page.path, w)
		}
	}
	b.clean()
}

// The file picker fills the text area with a text file, which is sent from there (edits and all),
// named after the file; any other file is uploaded as it is.
func TestBrowserFilePicker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	text, bin := filepath.Join(dir, "notes.md"), filepath.Join(dir, "blob.bin")
	if err := os.WriteFile(text, []byte("# Notes\r\n\r\nhello\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("\x00\x01binary\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := newTab(t, e)
	for _, c := range []struct {
		file, wantArea, wantPaste, wantName string
	}{
		{text, "# Notes\n\nhello\n", "# Notes\n\nhello\n", "notes.md"},
		{bin, "", "\x00\x01binary\xff", "blob.bin"},
	} {
		b.open("/")
		b.do(chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{c.file}),
			chromedp.SetValue(chromedp.CSS("#expires_in"), "1h"))
		if got := b.waitValue("#filename", c.wantName); got != c.wantName {
			t.Fatalf("%s: the file name field holds %q", c.wantName, got)
		}
		// The name is set at once, the text once the page has read the file: wait for both.
		if got := b.waitValue("#content", c.wantArea); got != c.wantArea {
			t.Errorf("%s: the text area holds %q, want %q", c.wantName, got, c.wantArea)
		}
		if status := b.load(chromedp.Click(chromedp.CSS(`button[type=submit]`))); status != 200 {
			t.Fatalf("%s: submit: %d", c.wantName, status)
		}
		code := strings.TrimPrefix(eval[string](b, `location.pathname`), "/")
		var meta struct {
			Filename  string    `json:"filename"`
			ExpiresAt time.Time `json:"expires_at"`
		}
		_ = json.Unmarshal(e.get("/api/v1/pastes/"+code).body, &meta)
		if got := e.get("/raw/" + code).text(); got != c.wantPaste || meta.Filename != c.wantName {
			t.Errorf("%s: stored %q named %q", c.wantName, got, meta.Filename)
		}
		if d := time.Until(meta.ExpiresAt); d < 59*time.Minute || d > time.Hour {
			t.Errorf("%s: expires in %v, want the hour chosen", c.wantName, d)
		}
	}
	b.clean()
}

// A kept token that is wrong is refused, forgotten, and the field to type one appears; a typed
// token then deletes.
func TestBrowserDeleteWithWrongKeptToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create("keep me", "")
	b := newTab(t, e)
	b.open("/" + p.code)
	b.do(chromedp.Evaluate[chromedp.Void](`localStorage.setItem("pastebin:token:` + p.code + `", JSON.stringify({token: "` + strings.Repeat("A", 43) + `"}))`))
	b.open("/" + p.code)
	b.do(chromedp.Click(chromedp.CSS("#delete summary")), chromedp.Click(chromedp.CSS("#delete-submit")))
	if got := b.waitText(".form-status", "That is not this paste's delete token."); got != "That is not this paste's delete token." {
		t.Fatalf("after a wrong kept token the form says %q", got)
	}
	b.do(chromedp.WaitVisible(chromedp.CSS("#delete-token")), chromedp.SendKeys(chromedp.CSS("#delete-token"), p.token))
	if status := b.load(chromedp.Click(chromedp.CSS("#delete-submit"))); status != http.StatusGone {
		t.Errorf("the typed token: %d, want the 410 page", status)
	}
	b.clean()
}
