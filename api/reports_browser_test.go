package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"pastebin/api"
)

// contentHash is the hex SHA-256 of a paste's bytes: its case in the reports queue.
func contentHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestBrowserReports reports pastes in Chromium as a reader would, from the paste page's Report link
// (its form refusing details too long, then showing the receipt, whose state the API answers), and
// a burn-after-reading paste without taking its view; then decides the cases in the console as an
// operator would: the queue groups two copies into one case, the preview shows a hostile paste as
// text, and the one-click take down, dismiss and take down and block close them, which the
// receipts and the closed queues show. Screenshots land in artifacts/screenshots/report-* and
// console-reports-*.
func TestBrowserReports(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 0), withConfig(func(c *api.Config) { c.ReportRetention = 90 * 24 * time.Hour }))
	const spam, hostile, fine = "buy cheap pills now", `<script>alert("xss")</script><img src=x onerror=alert(1)>`, "a recipe"
	copy1, copy2, bad, ok, burn := e.create(spam, ""), e.create(spam, ""), e.create(hostile, ""), e.create(fine, ""), e.create("once only", "?burn=true")
	b := newTab(t, e)

	b.open("/" + copy1.code)
	if status := b.load(chromedp.Click(chromedp.CSS("#report"))); status != http.StatusOK || b.text("h1") != "Report paste "+copy1.code {
		t.Fatalf("the Report link: %d, page %q", status, b.text("h1"))
	}
	if got := b.text("#contact-help"); !strings.Contains(got, "erased after 90 days") {
		t.Errorf("the form says of the contact %q, want how long it is kept", got)
	}
	b.screenshot("report-form")
	b.do(chromedp.Click(chromedp.CSS("#reason-spam")), chromedp.SetValue(chromedp.CSS("#details"), strings.Repeat("é", 2001)))
	if status := b.load(chromedp.Click(chromedp.CSS("#report-submit"))); status != http.StatusRequestEntityTooLarge || !strings.Contains(b.text("#form-error"), "4000 bytes") {
		t.Fatalf("details past 4000 bytes: %d %q", status, b.text("#form-error"))
	}
	if !eval[bool](b, `document.querySelector("#reason-spam").checked`) {
		t.Error("the form shown again lost its reason")
	}
	b.screenshot("report-form-error")
	b.do(chromedp.SetValue(chromedp.CSS("#details"), "An ad for pills, posted twice."),
		chromedp.SendKeys(chromedp.CSS("#contact"), "reader@example.org"))
	if status := b.load(chromedp.Click(chromedp.CSS("#report-submit"))); status != http.StatusOK {
		t.Fatalf("the report form: %d", status)
	}
	receipt := eval[string](b, `document.querySelector("#receipt").value`)
	if len(receipt) != 43 || eval[string](b, `document.querySelector("#receipt-link").getAttribute("href")`) != "/api/v1/reports/"+receipt {
		t.Fatalf("the receipt page shows %q", b.text("main"))
	}
	b.screenshot("report-receipt")
	if got := e.stateOf(receipt); got != "open" {
		t.Errorf("the receipt's state %q, want open", got)
	}
	receiptOf(t, e.report(copy2.code, `{"reason": "spam"}`))
	receiptOf(t, e.report(bad.code, `{"reason": "malware", "details": "<b>look</b>"}`))
	okReceipt := receiptOf(t, e.report(ok.code, `{"reason": "other"}`))

	b.open("/" + burn.code) // the page that asks first: reporting from it takes no view
	b.load(chromedp.Click(chromedp.CSS("#report")))
	b.do(chromedp.Click(chromedp.CSS("#reason-illegal")))
	if status := b.load(chromedp.Click(chromedp.CSS("#report-submit"))); status != http.StatusOK {
		t.Fatalf("reporting the burn paste: %d", status)
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE short_code = $1 AND views_left = 1`, burn.code); n != 1 {
		t.Error("reporting a burn-after-reading paste took its view")
	}

	signIn(t, b)
	b.open("/admin/reports")
	if got := eval[int](b, `document.querySelectorAll("article.case").length`); got != 4 {
		t.Fatalf("the queue shows %d cases, want 4 (the two copies are one)", got)
	}
	if got := eval[int](b, `document.querySelectorAll("#case-`+contentHash(spam)+` .case-reports tbody tr").length`); got != 2 {
		t.Errorf("the copies' case lists %d reports, want 2", got)
	}
	b.screenshot("console-reports-queue")

	b.load(chromedp.Click(chromedp.CSS("#preview-" + bad.code)))
	if got := b.textContent("#preview-text"); got != hostile {
		t.Errorf("the preview shows %q, want the paste's text as text", got)
	}
	b.screenshot("console-reports-preview")
	b.open("/admin/pastes/" + burn.code + "/preview")
	if got := b.textContent("#preview-text"); got != "once only" || e.count(`SELECT count(*) FROM pastes WHERE short_code = $1 AND views_left = 1`, burn.code) != 1 {
		t.Errorf("the burn paste's preview: %q, or it took the view", got)
	}

	b.open("/admin/reports")
	decide := func(id, want string) {
		t.Helper()
		if status := b.load(chromedp.Click(chromedp.CSS("#" + id))); status != http.StatusOK || !strings.Contains(b.text("#notice"), want) {
			t.Fatalf("%s: %d, notice %q, want %q", id, status, b.text("#notice"), want)
		}
	}
	decide("takedown-"+contentHash(spam), "2 pastes taken down; 2 reports closed")
	b.screenshot("console-reports-decided")
	decide("dismiss-"+contentHash(fine), "dismissed; 1 report closed")
	decide("block-"+contentHash(hostile), "1 paste taken down, content blocked; 1 report closed")
	decide("legal-"+contentHash("once only"), "1 paste taken down; 1 report closed")
	if got := eval[int](b, `document.querySelectorAll("article.case").length`); got != 0 || b.text("#no-reports") == "" {
		t.Errorf("the queue shows %d cases after every decision, want none", got)
	}
	b.open("/admin/reports?state=actioned")
	if got := eval[int](b, `document.querySelectorAll("article.case").length`); got != 3 {
		t.Errorf("the actioned queue shows %d cases, want 3", got)
	}
	b.screenshot("console-reports-actioned")

	for receipt, want := range map[string]string{receipt: "actioned", okReceipt: "dismissed"} {
		if got := e.stateOf(receipt); got != want {
			t.Errorf("a receipt's state %q, want %q", got, want)
		}
	}
	for code, want := range map[string]int64{copy1.code: 410, copy2.code: 410, bad.code: 410, ok.code: 200, burn.code: 451} {
		if status := b.open("/" + code); status != want {
			t.Errorf("/%s after the decisions: %d, want %d", code, status, want)
		}
	}
	b.clean()
}

// signIn signs the tab in to the console with the admin token.
func signIn(t *testing.T, b *tab) {
	t.Helper()
	b.open("/admin/sign-in")
	b.do(chromedp.SendKeys(chromedp.CSS("#token"), adminToken))
	if status := b.load(chromedp.Click(chromedp.CSS("#sign-in"))); status != http.StatusOK {
		t.Fatalf("sign in: %d", status)
	}
}
