package api_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pastebin/api"
	"pastebin/cache/cachetest"
)

// withAdminFailures turns on the allowance of wrong admin tokens per client, counted in the test's
// Redis, under the test's prefix.
func withAdminFailures(r api.Rate) envOption {
	return func(c *api.Config, e *env) { c.AdminFailureRate, e.ratesInRedis = r, true }
}

const wrongAdminToken = "a-wrong-guess-of-the-admin-token"

// bearerAdmin asks an admin route for the backlog with token.
func (e *env) bearerAdmin(token string) response {
	e.t.Helper()
	return e.get("/admin/cleanup/backlog", "Authorization", "Bearer "+token)
}

// TestAdminFailureLimit: wrong admin tokens, as bearer tokens and on the console's sign-in form,
// draw on one allowance per client, apart from wrong delete tokens; right tokens cost nothing; past
// the allowance even the right token is refused (3 a minute: one back every 20 seconds); every
// wrong token is logged, never the token itself.
func TestAdminFailureLimit(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, func(t *testing.T, kind cachetest.Kind) { testAdminFailureLimit(t, kind, true) })
	t.Run("without Redis", func(t *testing.T) {
		t.Parallel()
		testAdminFailureLimit(t, cachetest.Single, false)
	})
}

func testAdminFailureLimit(t *testing.T, kind cachetest.Kind, inRedis bool) {
	var logs logBuffer
	opts := []envOption{withAdmin(adminToken, 1), withRates(api.Rate{}, perMinute(3)), withAdminFailures(perMinute(3)),
		withRedis(kind), withLogger(slog.New(slog.NewJSONHandler(&logs, nil)))}
	if !inRedis {
		opts = append(opts, withRateRedis(cachetest.Refused(t)))
	}
	e := newEnv(t, opts...)
	for i := range 10 {
		if r := e.bearerAdmin(adminToken); r.StatusCode != http.StatusOK {
			t.Fatalf("right token %d: %d %s", i+1, r.StatusCode, r.body)
		}
	}
	// A user at the operator's address spends its wrong delete tokens: the operator is not locked out.
	p := e.create("p", "")
	for range 3 {
		if r := e.delete(p.code, strings.Repeat("A", 43)); r.StatusCode != http.StatusForbidden {
			t.Fatalf("wrong delete token: %d", r.StatusCode)
		}
	}
	checkRefused(t, e.delete(p.code, strings.Repeat("A", 43)), http.StatusTooManyRequests, "rate-limited", "20")
	if r := e.bearerAdmin(adminToken); r.StatusCode != http.StatusOK {
		t.Fatalf("the admin token once deletes are refused: %d, want 200", r.StatusCode)
	}
	// Bearer tokens and the sign-in form share one allowance.
	for range 2 {
		checkRefused(t, e.bearerAdmin(wrongAdminToken), http.StatusUnauthorized, "wrong-admin-token", "")
	}
	// With one attempt left, the right token goes through and gives its attempt back.
	for range 3 {
		if r := e.bearerAdmin(adminToken); r.StatusCode != http.StatusOK {
			t.Fatalf("the right token with one attempt left: %d, want 200", r.StatusCode)
		}
	}
	if r := e.form("/admin/sign-in", url.Values{"token": {wrongAdminToken}}); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token on the sign-in form: %d", r.StatusCode)
	}
	checkRefused(t, e.bearerAdmin(adminToken), http.StatusTooManyRequests, "rate-limited", "20")
	r := e.form("/admin/sign-in", url.Values{"token": {adminToken}})
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "20" || len(r.Cookies()) != 0 {
		t.Errorf("the right token on the form past the limit: %d, Retry-After %q, cookies %v", r.StatusCode, r.Header.Get("Retry-After"), r.Cookies())
	}
	checkWrongTokenLogs(t, logs.String(), map[string]int{"api": 2, "console": 1})
}

// checkWrongTokenLogs checks that each wrong admin token was logged once, by how it came and from
// where, and that no line holds a token.
func checkWrongTokenLogs(t *testing.T, logs string, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for _, l := range parseLogs(t, logs) {
		if l.Msg == "wrong admin token" {
			if !strings.Contains(l.raw, `"client":"127.0.0.1"`) {
				t.Errorf("a wrong admin token logged without its client: %s", l.raw)
			}
			for _, via := range []string{"api", "console"} {
				if strings.Contains(l.raw, `"via":"`+via+`"`) {
					got[via]++
				}
			}
		}
	}
	if got["api"] != want["api"] || got["console"] != want["console"] {
		t.Errorf("wrong admin tokens logged: %v, want %v", got, want)
	}
	if strings.Contains(logs, wrongAdminToken) || strings.Contains(logs, adminToken) {
		t.Errorf("a token is in the log:\n%s", logs)
	}
}

// TestAdminFailuresParallel: guesses sent at once, as bearer tokens and on the sign-in form, are
// compared no more often than the allowance allows: each takes its share before it is judged, so a
// burst cannot all slip through while one failure is left.
func TestAdminFailuresParallel(t *testing.T) {
	t.Parallel()
	// 5 an hour: none comes back while the test runs, however slow the machine.
	e := newEnv(t, withAdmin(adminToken, 1), withAdminFailures(api.Rate{Requests: 5, Window: time.Hour}))
	var compared, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			var r response
			if i%2 == 0 {
				r = e.bearerAdmin(wrongAdminToken)
			} else {
				r = e.form("/admin/sign-in", url.Values{"token": {wrongAdminToken}})
			}
			switch r.StatusCode {
			case http.StatusUnauthorized:
				compared.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			default:
				t.Errorf("guess %d: %d %s", i, r.StatusCode, r.body)
			}
		})
	}
	wg.Wait()
	if compared.Load() != 5 || refused.Load() != 35 {
		t.Errorf("of 40 guesses at once, %d were compared and %d refused; want 5 and 35", compared.Load(), refused.Load())
	}
}
