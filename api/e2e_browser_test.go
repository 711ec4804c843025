package api_test

import (
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"pastebin/envelope"
)

// End-to-end encryption in a real Chromium (browserharness_test.go): the page's Web Crypto code
// (api/site/static/e2e.js) and the Go implementation (envelope) open each other's pastes, and what
// the browser sends leaves the text, title and file name nowhere on the server.

// The paste the browser encrypts, and what must never reach the server in clear.
const (
	secretText     = "The eagle lands at midnight: 7f3a9c\n\tsecond line\n"
	secretTitle    = "Operation Nightjar"
	secretPassword = "correct horse battery"
)

// TestBrowserEncryptsGoDecrypts creates a paste with the form's switch on, a title, a language and
// a password: the browser lands on the paste's link with the key after #, asks for the password,
// and shows the text. The Go implementation opens what the server stored with that key and
// password; the text, the title and the password appear nowhere in PostgreSQL, Redis, S3 or the logs.
func TestBrowserEncryptsGoDecrypts(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	e := newEnv(t, withLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	b := newTab(t, e)
	b.open("/")
	b.do(chromedp.WaitVisible(chromedp.CSS("#content")), chromedp.Click(chromedp.CSS("#encrypt")),
		chromedp.WaitVisible(chromedp.CSS("#encrypt-password")))
	first, rest, _ := strings.Cut(secretText, "\t") // the Tab key is pressed on its own
	b.do(chromedp.SendKeys(chromedp.CSS("#content"), first), chromedp.KeyEvent("\t"), chromedp.SendKeys(chromedp.CSS("#content"), rest),
		chromedp.SendKeys(chromedp.CSS("#title"), secretTitle), chromedp.SetValue(chromedp.CSS("#language"), "go"),
		chromedp.SetValue(chromedp.CSS("#max_views"), "5"), chromedp.SendKeys(chromedp.CSS("#encrypt-password"), secretPassword))
	b.shots("form-encrypt")
	b.do(chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	code, key := b.waitEncryptedLink()
	b.do(chromedp.WaitVisible(chromedp.CSS("#e2e-take")))
	if got := len(eval[string](b, `document.querySelector("#token").value`)); got != 43 {
		t.Errorf("the page shows a delete token of %d characters, want the one just made", got)
	}
	b.do(chromedp.Click(chromedp.CSS("#e2e-open")), chromedp.WaitVisible(chromedp.CSS("#e2e-password")))
	b.do(chromedp.SendKeys(chromedp.CSS("#e2e-password"), secretPassword), chromedp.Click(chromedp.CSS("#e2e-decrypt")),
		chromedp.WaitVisible(chromedp.CSS("#code")))
	if got, title := b.textContent("#code"), b.text("h1"); got != secretText || title != secretTitle {
		t.Errorf("the page shows %q titled %q, want %q titled %q", got, title, secretText, secretTitle)
	}
	if link := eval[string](b, `document.querySelector("#link").value`); !strings.HasSuffix(link, "/"+code+"#"+key) {
		t.Errorf("the link to copy is %q, want the paste's with its key", link)
	}
	b.shots("encrypted-paste")

	// What the server holds opens in Go with the key from the link and the password.
	m := e.meta(code)
	if m["views_left"] != 4.0 || m["title"] != "" || m["encryption"] != "v1; kdf=pbkdf2-sha256; iter=600000" {
		t.Errorf("metadata: %v", m)
	}
	r := e.do(e.request(http.MethodPost, "/raw/"+code, nil))
	got := openWithLink(t, r.body, r.Header.Get("Paste-Encryption"), key, secretPassword)
	if string(got.Text) != secretText || got.Title != secretTitle || got.Language != "go" {
		t.Errorf("Go opened %+v", got)
	}
	e.get("/raw/" + code) // a read that would fill the cache, were the paste cacheable
	if where := e.leaks(t, logs.String(), secretText[:20], secretTitle, secretPassword, key); len(where) > 0 {
		t.Errorf("a secret reached the server: %v", where)
	}
	// The search is not blind: a plain paste's text and title are found.
	plain := e.create("plain text for all to see", "?title=Plain%20title")
	e.get("/raw/" + plain.code)
	if where := e.leaks(t, logs.String(), "plain text for all to see", "Plain title"); len(where) < 3 {
		t.Errorf("the search for secrets found a plain paste only in %v: want S3, Redis and PostgreSQL", where)
	}
	b.clean()
}

// waitEncryptedLink waits until the page is at a paste's link with a key after #, and returns them.
func (b *tab) waitEncryptedLink() (code, key string) {
	b.t.Helper()
	link := regexp.MustCompile(`/([0-9A-Za-z]{11})#([A-Za-z0-9_-]{43})$`)
	deadline := time.Now().Add(30 * time.Second) // PBKDF2's 600,000 rounds, on a busy machine
	for time.Now().Before(deadline) {
		if m := link.FindStringSubmatch(eval[string](b, `location.href`)); m != nil {
			b.do(chromedp.WaitReady(chromedp.CSS("#e2e")))
			return m[1], m[2]
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.t.Fatalf("the browser is at %s (form error: %q), want a paste's link with its key", eval[string](b, `location.href`),
		eval[string](b, `(document.querySelector("#form-error") || {}).textContent || ""`))
	return "", ""
}

func openWithLink(t *testing.T, body []byte, format, key, password string) envelope.Paste {
	t.Helper()
	f, err := envelope.ParseFormat(format)
	if err != nil {
		t.Fatal(err)
	}
	k, err := envelope.DecodeKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p, err := envelope.Open(body, f, k, password)
	if err != nil {
		t.Fatalf("Go could not open the browser's paste: %v", err)
	}
	return p
}

// TestBrowserOpensGoEncrypted: the page opens what Go sealed, the vectors of a third
// implementation (envelope/testdata), and Go opens what the page's code seals; a wrong password
// says so and can be typed again, a link without its key says what is missing, and without
// JavaScript the page says why it cannot show the paste.
func TestBrowserOpensGoEncrypted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := newTab(t, e)
	b.open("/")
	checkVectorsInPage(t, b)
	checkPageSealsForGo(t, b)

	body, f, k, err := envelope.Seal(envelope.Paste{Title: "From Go", Filename: "go.txt", Text: []byte("sealed by Go\nline 2\n")}, "pässword")
	if err != nil {
		t.Fatal(err)
	}
	code := e.createEncrypted(body, f.String(), "")
	b.open("/" + code + "#" + envelope.EncodeKey(k))
	b.do(chromedp.WaitVisible(chromedp.CSS("#e2e-password")), chromedp.SendKeys(chromedp.CSS("#e2e-password"), "wrong"),
		chromedp.Click(chromedp.CSS("#e2e-decrypt")))
	if got := b.waitText("#e2e-status", "Wrong key or password: this paste did not decrypt."); !strings.HasPrefix(got, "Wrong key") {
		t.Errorf("a wrong password says %q", got)
	}
	b.shots("encrypted-wrong-password")
	b.do(chromedp.SetValue(chromedp.CSS("#e2e-password"), "pässword"), chromedp.Click(chromedp.CSS("#e2e-decrypt")),
		chromedp.WaitVisible(chromedp.CSS("#code")))
	if got := b.textContent("#code"); got != "sealed by Go\nline 2\n" || b.text("h1") != "From Go" {
		t.Errorf("the page shows %q titled %q", got, b.text("h1"))
	}
	if name := eval[string](b, `document.querySelector("#e2e-download").download`); name != "go.txt" {
		t.Errorf("the download is named %q, want the file name inside the envelope", name)
	}

	b.open("/" + code)
	if got := b.waitText("#e2e-status", ""); !strings.Contains(got, "no key") {
		t.Errorf("a link without its key says %q", got)
	}
	b.clean()
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	b.open("/") // from another page: a link differing only after # would not load the page again
	b.open("/" + code + "#" + envelope.EncodeKey(k))
	if got := b.text("#e2e"); !strings.Contains(got, "Turn on JavaScript") || strings.Contains(got, "Decrypting") {
		t.Errorf("without JavaScript the page says %q", got)
	}
	b.shots("encrypted-nojs")
}

// checkVectorsInPage opens, with the page's code, the envelopes Python sealed.
func checkVectorsInPage(t *testing.T, b *tab) {
	t.Helper()
	raw, err := os.ReadFile("../envelope/testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	got := eval[string](b, `(async () => {
		const doc = `+string(raw)+`;
		const out = [];
		for (const v of doc.vectors) {
			const body = Uint8Array.from(v.body_hex.match(/../g), (h) => parseInt(h, 16));
			const p = await window.pastebinE2E.open(body, v.format, v.key, v.password);
			out.push([p.title, p.filename, p.language, new TextDecoder().decode(p.text)].join("|"));
		}
		return out.join("\n");
	})()`)
	want := "Ünïcode title|main.go|go|package main\n\nÜnïcode title|main.go|go|package main\n"
	if got != want {
		t.Errorf("the page opened the vectors as %q, want %q", got, want)
	}
}

// checkPageSealsForGo seals in the page, with and without a password, and opens it in Go.
func checkPageSealsForGo(t *testing.T, b *tab) {
	t.Helper()
	for _, password := range []string{"", "pa\u0301ss"} { // in NFD: both sides normalise to NFC
		js := `(async () => {
			const s = await window.pastebinE2E.seal({title: "T", filename: "f.go", language: "go"},
				new TextEncoder().encode("sealed in the page ✓"), ` + jsString(password) + `);
			return JSON.stringify({body: Array.from(s.body, (x) => x.toString(16).padStart(2, "0")).join(""), format: s.format, key: s.key});
		})()`
		var s struct{ Body, Format, Key string }
		if err := json.Unmarshal([]byte(eval[string](b, js)), &s); err != nil {
			t.Fatal(err)
		}
		body, _ := hex.DecodeString(s.Body)
		p := openWithLink(t, body, s.Format, s.Key, strings.ReplaceAll(password, "a\u0301", "á"))
		if string(p.Text) != "sealed in the page ✓" || p.Title != "T" || p.Filename != "f.go" {
			t.Errorf("Go opened the page's envelope as %+v", p)
		}
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestBrowserViewLimit: the page of a paste with views asks first and says how many are left; its
// button takes one and shows the text with what is left; the last one burns it.
func TestBrowserViewLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.create(goSource, "?max_views=2&title=Two%20views")
	b := newTab(t, e)
	b.open("/" + p.code)
	if got := b.text(".notice.burn"); !strings.Contains(got, "2 of 2 views left") || strings.Contains(b.text("main"), "fmt.Println") {
		t.Fatalf("the page of a paste with views says %q", got)
	}
	b.shots("views-confirm")
	if status := b.load(chromedp.Click(chromedp.CSS("#burn-open"))); status != http.StatusOK || b.textContent("#code") != goSource {
		t.Fatalf("opening: %d, %q", status, b.textContent("#code"))
	}
	if got := b.text(".notice.burned"); !strings.Contains(got, "1 of 2 views left") {
		t.Errorf("after one view the page says %q", got)
	}
	b.shots("views-taken")
	b.open("/" + p.code)
	if status := b.load(chromedp.Click(chromedp.CSS("#burn-open"))); status != http.StatusOK ||
		!strings.Contains(b.text(".notice.burned"), "last view") {
		t.Errorf("the last view: %d, %q", status, b.text(".notice.burned"))
	}
	if status := b.open("/" + p.code); status != http.StatusGone {
		t.Errorf("after the last view: %d, want 410", status)
	}
	b.clean()
}

// TestBrowserEncryptedViewLimit: an encrypted paste with views shows its own button, which takes
// one view with the page's script; reloading asks again, and the metadata counts it.
func TestBrowserEncryptedViewLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body, f, k, err := envelope.Seal(envelope.Paste{Text: []byte("twice, encrypted\n")}, "")
	if err != nil {
		t.Fatal(err)
	}
	code := e.createEncrypted(body, f.String(), "?max_views=2")
	b := newTab(t, e)
	b.open("/" + code + "#" + envelope.EncodeKey(k))
	b.do(chromedp.WaitVisible(chromedp.CSS("#e2e-open")))
	if e.meta(code)["views_left"] != 2.0 {
		t.Fatalf("opening the page took a view")
	}
	b.shots("encrypted-take")
	b.do(chromedp.Click(chromedp.CSS("#e2e-open")), chromedp.WaitVisible(chromedp.CSS("#code")))
	if got := b.textContent("#code"); got != "twice, encrypted\n" {
		t.Errorf("the page shows %q", got)
	}
	if left := e.meta(code)["views_left"]; left != 1.0 {
		t.Errorf("views left after the button: %v, want 1", left)
	}
	b.clean()
}

// TestBrowserEncryptionNeedsHTTPS: over plain HTTP to a host other than localhost, browsers offer
// no Web Crypto, and the switch says that encryption needs HTTPS instead of failing on submit.
func TestBrowserEncryptionNeedsHTTPS(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, err := url.Parse(e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b := newTab(t, e, chromedp.Flag("host-resolver-rules", "MAP pastebin.test 127.0.0.1"))
	b.base = "http://pastebin.test:" + u.Port()
	b.open("/")
	b.do(chromedp.WaitReady(chromedp.CSS("#encrypt")))
	if !eval[bool](b, `document.querySelector("#encrypt").disabled && !window.isSecureContext`) ||
		!strings.Contains(b.text("#encrypt-help"), "needs HTTPS") {
		t.Errorf("on plain HTTP the switch says %q (disabled: %v)", b.text("#encrypt-help"), eval[bool](b, `document.querySelector("#encrypt").disabled`))
	}
	b.shots("form-encrypt-needs-https")
	b.clean()
}

// shots saves the page as name in light and dark, and at a phone's width, where nothing may
// overflow sideways.
func (b *tab) shots(name string) {
	b.t.Helper()
	b.screenshot(name)
	b.darkMode(true)
	b.screenshot(name + "-dark")
	b.darkMode(false)
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	b.screenshot("phone-" + name)
	if w := eval[int](b, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
		b.t.Errorf("%s is %dpx wider than the phone", name, w)
	}
	b.do(chromedp.EmulateViewport(1280, 900)) // back to the window newTab opened
}
