package api_test

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserForgetsTokens: the browser forgets the delete token of a paste as soon as a page says
// the paste is gone (deleted: 410, never there: 404, taken down for a legal reason: 451, burned by
// this browser's own button), when the paste expires, and 90 days after it kept the token of a
// paste that never expires. The tokens of pastes that live are kept.
func TestBrowserForgetsTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	live, deleted, legal := e.create("lives on", ""), e.create("deleted elsewhere", ""), e.create("taken down", "")
	burn := e.create("burned here", "?burn=true")
	if r := e.delete(deleted.code, deleted.token); r.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", r.StatusCode)
	}
	r := e.do(e.request(http.MethodDelete, "/admin/pastes/"+legal.code+"?reason=court+order&legal=true", nil, "Authorization", "Bearer "+adminToken))
	if r.StatusCode != http.StatusOK {
		t.Fatalf("takedown: %d %s", r.StatusCode, r.body)
	}
	const never = "Zzzzzzzzzz0" // well-formed, never created
	day := 24 * time.Hour
	kept := map[string]map[string]any{
		live.code:     {"token": live.token, "expires": time.Now().Add(day).Format(time.RFC3339), "saved": ms(time.Now())},
		deleted.code:  {"token": deleted.token, "expires": time.Now().Add(day).Format(time.RFC3339), "saved": ms(time.Now())},
		legal.code:    {"token": legal.token, "expires": time.Now().Add(day).Format(time.RFC3339), "saved": ms(time.Now())},
		burn.code:     {"token": burn.token, "expires": time.Now().Add(day).Format(time.RFC3339), "saved": ms(time.Now())},
		never:         {"token": strings.Repeat("N", 43), "expires": nil, "saved": ms(time.Now())},
		"Expired0000": {"token": strings.Repeat("E", 43), "expires": time.Now().Add(-time.Minute).Format(time.RFC3339), "saved": ms(time.Now().Add(-day))},
		"KeptForever": {"token": strings.Repeat("F", 43), "expires": nil, "saved": ms(time.Now().Add(-91 * day))},
		"NeverYounge": {"token": strings.Repeat("Y", 43), "expires": nil, "saved": ms(time.Now().Add(-89 * day))},
		"NeverOldFmt": {"token": strings.Repeat("O", 43)}, // kept before entries had a saved time
	}
	b := newTab(t, e)
	b.open("/" + live.code)
	for code, v := range kept { // the value: a JS string literal of the entry's JSON
		entry := mustJSON(t, string(mustJSON(t, v)))
		b.do(chromedp.Evaluate[chromedp.Void](`localStorage.setItem("pastebin:token:` + code + `", ` + string(entry) + `)`))
	}
	b.open("/" + live.code) // a page load prunes what expired or was kept too long
	checkKept(t, b, live.code, deleted.code, legal.code, burn.code, never, "NeverYounge", "NeverOldFmt")
	if eval[bool](b, `typeof JSON.parse(localStorage.getItem("pastebin:token:NeverOldFmt")).saved !== "number"`) {
		t.Error("an entry without a saved time was not given one: it would be kept forever")
	}
	for _, p := range []struct {
		path   string
		status int64
	}{{"/" + deleted.code, 410}, {"/raw/" + legal.code, 451}, {"/" + never, 404}} {
		if status := b.open(p.path); status != p.status {
			t.Errorf("%s: %d, want %d", p.path, status, p.status)
		}
	}
	checkKept(t, b, live.code, burn.code, "NeverYounge", "NeverOldFmt")
	b.open("/" + burn.code)
	if status := b.load(chromedp.Click(chromedp.CSS("#burn-open"))); status != 200 || b.textContent("#code") != "burned here" {
		t.Fatalf("burn: %d", status)
	}
	checkKept(t, b, live.code, "NeverYounge", "NeverOldFmt")
	b.clean()
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// checkKept checks that the browser keeps the tokens of exactly codes.
func checkKept(t *testing.T, b *tab, codes ...string) {
	t.Helper()
	got := eval[[]string](b, `Object.keys(localStorage).filter(k => k.startsWith("pastebin:token:")).map(k => k.slice(15)).sort()`)
	sort.Strings(codes)
	if strings.Join(got, " ") != strings.Join(codes, " ") {
		t.Errorf("the browser keeps the tokens of %q, want %q", got, codes)
	}
}
