package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"pastebin/paste"
)

// TestBrowserHotContent drives the console's hot content page in Chromium: a content that eight
// clients created is listed first, hot, with its references and links to its pastes, above a note
// one client created; one click on its button blocks it and takes every copy down, and the page
// says so and shows it blocked. Screenshots land in artifacts/screenshots/console-hot-*.
func TestBrowserHotContent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withSpam(paste.SpamThreshold{Clients: 5, Window: 10 * time.Minute}))
	const spam = "win a prize at example.com, click now"
	for i := range 8 {
		e.createFrom(fmt.Sprintf("203.0.113.%d", i+1), spam, i)
	}
	e.createFrom("198.51.100.9", "my shopping list", 0)
	spamCode := e.hotList().Contents[0].Pastes[0]

	b := newTab(t, e)
	b.open("/admin/sign-in")
	b.do(chromedp.SendKeys(chromedp.CSS("#token"), adminToken))
	if status := b.load(chromedp.Click(chromedp.CSS("#sign-in"))); status != http.StatusOK {
		t.Fatalf("sign in: %d", status)
	}
	b.load(chromedp.Click(chromedp.CSS(`a[href="/admin/content/hot"]`)))
	if got := b.text("h1"); got != "Hot content" {
		t.Fatalf("the navigation's Hot content link led to %q", got)
	}
	rows := `document.querySelectorAll("#hot-list tbody tr")`
	if got := eval[int](b, rows+`.length`); got != 2 {
		t.Fatalf("the page lists %d contents, want 2", got)
	}
	first := `#hot-list tbody tr:first-child`
	if got := b.text(first + " td:nth-child(2)"); got != "8" {
		t.Errorf("the first row shows %s distinct clients, want 8", got)
	}
	if got := b.text(first + " td:nth-child(3)"); got != "8" {
		t.Errorf("the first row shows %s references, want 8", got)
	}
	if !strings.Contains(b.text(first+" td:first-child"), "hot") {
		t.Errorf("the first row is not marked hot: %q", b.text(first+" td:first-child"))
	}
	if got := eval[int](b, `document.querySelectorAll("#hot-list tbody tr:first-child td:nth-child(4) a").length`); got != 5 {
		t.Errorf("the first row links %d pastes, want 5", got)
	}
	if strings.Contains(b.text("#hot-list tbody tr:nth-child(2) td:first-child"), "hot") {
		t.Errorf("the note one client created is marked hot")
	}
	b.screenshot("console-hot-content")

	if status := b.load(chromedp.Click(chromedp.CSS(first + " button"))); status != http.StatusOK {
		t.Fatalf("block and take down: %d", status)
	}
	if got := b.text("#notice"); !strings.Contains(got, "is blocked; 8 pastes taken down") {
		t.Errorf("notice %q", got)
	}
	if got := b.text(first + " td:last-child"); got != "blocked" {
		t.Errorf("the blocked content's row ends with %q, want blocked", got)
	}
	if got := b.text(first + " td:nth-child(3)"); got != "none left" {
		t.Errorf("the blocked content's references: %q, want none left", got)
	}
	b.screenshot("console-hot-content-blocked")
	if status := b.open("/" + spamCode); status != http.StatusGone {
		t.Errorf("a copy's page after the block: %d, want 410", status)
	}
	if n := e.count(`SELECT count(*) FROM admin_audit WHERE action = 'block' AND via = 'console'`); n != 1 {
		t.Errorf("%d console blocks in the audit log, want 1", n)
	}
	b.clean()
}
