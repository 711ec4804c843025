package store

import (
	"html"
	"net/url"
	"strings"
	"testing"
)

// FuzzValidShortCode checks the gate every read and delete passes before a query: it accepts exactly
// the codes newShortCode can draw, and those need no escaping in a URL path or a page.
func FuzzValidShortCode(f *testing.F) {
	f.Add("AbCdEfGh123")
	f.Add("AbCdEfGh12")
	f.Add("AbCdEfGh12/")
	f.Fuzz(func(t *testing.T, code string) {
		// Trim by the alphabet leaves nothing exactly when every byte is in it: a second opinion
		// written another way than ValidShortCode's byte ranges.
		want := len(code) == ShortCodeLength && strings.Trim(code, shortCodeAlphabet) == ""
		got := ValidShortCode(code)
		if got != want {
			t.Errorf("ValidShortCode(%q) = %v, want %v", code, got, want)
		}
		if got && (url.PathEscape(code) != code || html.EscapeString(code) != code) {
			t.Errorf("ValidShortCode accepted %q, which needs escaping", code)
		}
		drawn, err := newShortCode()
		if err != nil {
			t.Fatal(err)
		}
		if !ValidShortCode(drawn) {
			t.Errorf("newShortCode() = %q, which ValidShortCode refuses", drawn)
		}
	})
}
