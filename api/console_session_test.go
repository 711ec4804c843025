package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"pastebin/api"
)

// TestConsoleSessionIdleTimeout: a session that goes unused for the idle timeout ends, well before
// its 12 hours; each request it sends keeps it going for another idle timeout.
func TestConsoleSessionIdleTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withConfig(func(c *api.Config) { c.ConsoleIdleTimeout = 10 * time.Minute }))
	s := e.signIn(adminToken)
	e.exec(`UPDATE admin_sessions SET last_seen_at = now() - interval '9 minutes'`)
	if r := e.page("/admin/runs", "Cookie", s.cookie); r.StatusCode != http.StatusOK {
		t.Fatalf("a session used 9 minutes ago: %d, want 200", r.StatusCode)
	}
	if n := e.count(`SELECT count(*) FROM admin_sessions WHERE last_seen_at > now() - interval '1 minute'`); n != 1 {
		t.Errorf("the request did not mark its session seen: %d sessions seen in the last minute", n)
	}
	e.exec(`UPDATE admin_sessions SET last_seen_at = now() - interval '11 minutes'`)
	if r := e.browse("/admin/runs", "Cookie", s.cookie); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/admin/sign-in") {
		t.Errorf("a session unused for 11 minutes: %d to %q, want 303 to sign in", r.StatusCode, r.Header.Get("Location"))
	}
	// The next sign-in forgets it.
	e.signIn(adminToken)
	if n := e.count(`SELECT count(*) FROM admin_sessions`); n != 1 {
		t.Errorf("%d sessions after signing in again, want 1: the idle one forgotten", n)
	}
}
