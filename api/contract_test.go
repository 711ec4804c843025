package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestProblemTextIsNotHTMLEscaped: problem details are JSON that is never HTML, so a "<" in a
// detail is written as it is, not as \u003c.
func TestProblemTextIsNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.get("/nothing/%3Chere%3E")
	if r.StatusCode != http.StatusNotFound || !strings.Contains(r.text(), "/nothing/<here>") {
		t.Errorf("got %d %s, want 404 naming /nothing/<here> as it is", r.StatusCode, r.body)
	}
}
