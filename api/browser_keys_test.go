package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserCreatorKey drives the create form of an instance where only key holders create, in
// Chromium: the form asks for a key; a wrong one shows the form again, filled in, asking again; the
// right one creates, and the browser keeps it (where no script reads it), so the form asks no more
// and creates with it; once the key is revoked the form asks again. Screenshots in
// artifacts/screenshots/keys-form-*.
func TestBrowserCreatorKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withKeys())
	k := e.mintKey("browser", "")
	b := newTab(t, e)
	b.open("/")
	if !eval[bool](b, `!!document.querySelector("#creator_key")`) {
		t.Fatal("the form does not ask for a creator key")
	}
	b.screenshot("keys-form-asks")
	b.do(chromedp.SendKeys(chromedp.CSS("#content"), "notes for the team"), chromedp.SendKeys(chromedp.CSS("#creator_key"), "pbk_wrong"))
	if status := b.load(chromedp.Click(chromedp.CSS(`form#create button[type=submit]`))); status != http.StatusUnauthorized ||
		!strings.Contains(b.text("#form-error"), "unknown or revoked") || eval[string](b, `document.querySelector("#content").value`) != "notes for the team" {
		t.Fatalf("a wrong key: %d, error %q", status, b.text("#form-error"))
	}
	b.screenshot("keys-form-wrong-key")
	b.do(chromedp.SendKeys(chromedp.CSS("#creator_key"), k.Key))
	if status := b.load(chromedp.Click(chromedp.CSS(`form#create button[type=submit]`))); status != http.StatusOK || !strings.Contains(b.text("main"), "notes for the team") {
		t.Fatalf("the right key: %d at %s", status, eval[string](b, `location.pathname`))
	}
	if eval[bool](b, `document.cookie.includes("creator_key")`) {
		t.Errorf("scripts can read the kept creator key")
	}
	b.open("/")
	if eval[bool](b, `!!document.querySelector("#creator_key")`) {
		t.Error("the form asks again for the key the browser keeps")
	}
	b.screenshot("keys-form-kept")
	b.do(chromedp.SendKeys(chromedp.CSS("#content"), "a second note"))
	if status := b.load(chromedp.Click(chromedp.CSS(`form#create button[type=submit]`))); status != http.StatusOK || !strings.Contains(b.text("main"), "a second note") {
		t.Fatalf("a create with the kept key: %d", status)
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE creator_key_id = $1`, k.ID); n != 2 {
		t.Errorf("%d pastes of the key, want 2", n)
	}
	e.revokeKey(k.ID)
	b.open("/")
	b.do(chromedp.SendKeys(chromedp.CSS("#content"), "after the revocation"))
	if status := b.load(chromedp.Click(chromedp.CSS(`form#create button[type=submit]`))); status != http.StatusUnauthorized ||
		!eval[bool](b, `!!document.querySelector("#creator_key")`) {
		t.Errorf("a create with a kept key since revoked: %d, asks again: %v", status, eval[bool](b, `!!document.querySelector("#creator_key")`))
	}
	b.screenshot("keys-form-revoked")
	b.clean()
}

// TestBrowserConsoleKeys drives the console's creator keys in Chromium: mint a key and read its
// secret once, see it listed with its pastes, open its page, and take everything it created down,
// revoking it. Screenshots in artifacts/screenshots/console-key*.
func TestBrowserConsoleKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withKeys())
	b := newTab(t, e)
	b.open("/admin/sign-in")
	b.do(chromedp.SendKeys(chromedp.CSS("#token"), adminToken))
	if status := b.load(chromedp.Click(chromedp.CSS("#sign-in"))); status != http.StatusOK {
		t.Fatalf("sign in: %d", status)
	}
	if status := b.load(chromedp.Click(chromedp.CSS(`nav a[href="/admin/keys"]`))); status != http.StatusOK || b.text("h1") != "Creator keys" {
		t.Fatalf("the Keys link: %d, page %q", status, b.text("h1"))
	}
	b.do(chromedp.SendKeys(chromedp.CSS("#key-label"), "ci runner"), chromedp.SendKeys(chromedp.CSS("#key-rate"), "600/1h"))
	if status := b.load(chromedp.Click(chromedp.CSS("#mint-submit"))); status != http.StatusCreated {
		t.Fatalf("mint: %d", status)
	}
	secret := b.text("#minted-key")
	if !strings.HasPrefix(secret, "pbk_") {
		t.Fatalf("the minted key shows %q", secret)
	}
	b.screenshot("console-keys-minted")
	p := e.createWith("made with the console's key", bearer(secret))
	e.createWith("and another", bearer(secret))
	b.open("/admin/keys")
	if strings.Contains(b.text("main"), secret) || !strings.Contains(b.text("#key-list"), "600/1h") {
		t.Errorf("the keys page shows the secret again, or not the key")
	}
	b.screenshot("console-keys")
	if status := b.load(chromedp.Click(chromedp.CSS(`#key-list tbody tr a`))); status != http.StatusOK || !strings.Contains(b.text("#key-paste-list"), p.code) {
		t.Fatalf("the key's page: %d", status)
	}
	b.screenshot("console-key")
	b.do(chromedp.SendKeys(chromedp.CSS("#key-takedown-reason"), "leaked key")) // "Revoke the key too" is checked already
	if status := b.load(chromedp.Click(chromedp.CSS("#key-takedown-submit"))); status != http.StatusOK ||
		!strings.Contains(b.text("#notice"), "2 pastes of this key taken down") || !strings.Contains(b.text("#notice"), "revoked") {
		t.Fatalf("takedown by key: %d %q", status, b.text("#notice"))
	}
	b.screenshot("console-key-takedown")
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusGone {
		t.Errorf("a paste of the key after the console's takedown: %d", r.StatusCode)
	}
	b.open("/admin/audit")
	if a := b.text("main"); !strings.Contains(a, "key-create") || !strings.Contains(a, "key-takedown") {
		t.Errorf("the audit page lacks the key actions")
	}
	b.clean()
}
