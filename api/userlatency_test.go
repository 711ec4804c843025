package api_test

import (
	"sync"
	"testing"
	"time"

	"pastebin/api"
)

// latencies counts the requests whose latency the server hands to the cleanup's pacing signal.
type latencies struct {
	mu sync.Mutex
	n  int
}

func (l *latencies) Observe(time.Duration) { l.mu.Lock(); l.n++; l.mu.Unlock() }

func (l *latencies) count() int { l.mu.Lock(); defer l.mu.Unlock(); return l.n }

// TestUserLatencyCountsOnlyUsersRoutes: the drain's pacing keeps the users' p99 within its budget,
// so only the routes users call feed it. The probes, /metrics (scraped every few seconds whatever
// the load) and the operators' /admin must not: their latency says nothing of what users feel.
func TestUserLatencyCountsOnlyUsersRoutes(t *testing.T) {
	t.Parallel()
	users := &latencies{}
	e := newEnv(t, withAdmin("admin-token-of-the-user-latency-test", 1), withDeps(func(d *api.Deps) { d.UserLatency = users }))
	c := e.create("hello users", "")
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/admin", "/admin/cleanup", "/admin/audit"} {
		e.get(path)
	}
	if n := users.count(); n != 1 {
		t.Fatalf("%d requests observed after a create and the probes, metrics and admin routes, want the create alone", n)
	}
	for _, path := range []string{"/" + c.code, "/raw/" + c.code, "/api/v1/pastes/" + c.code, "/", "/no/such/route"} {
		e.get(path)
	}
	if n := users.count(); n != 6 {
		t.Errorf("%d requests observed, want the create and the five users' reads", n)
	}
}
