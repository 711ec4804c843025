package problem

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"pastebin/paste"
	"pastebin/store"
)

// TestFromReadByPost: a paste that only a POST reads, refused by the reader itself (whoever forgot
// to ask paste.OpenToGet first), answers 409 with the type the read routes give it: burn after
// reading for one view, view-limited for more, whatever wrapped the error.
func TestFromReadByPost(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "/raw/Abcdefghijk", nil)
	for _, tt := range []struct {
		maxViews int
		want     *Problem
	}{
		{1, BurnAfterReading},
		{3, ViewLimited},
	} {
		p := store.Paste{MaxViews: tt.maxViews, ViewsLeft: tt.maxViews}
		err := fmt.Errorf("reading: %w", &paste.ReadByPostError{Paste: p})
		got := From(r, slog.New(slog.DiscardHandler), err)
		if got.Name != tt.want.Name || got.Status != 409 || !strings.Contains(got.Detail, "POST") {
			t.Errorf("max_views %d: %s %d %q; want %s", tt.maxViews, got.Name, got.Status, got.Detail, tt.want.Name)
		}
	}
}
