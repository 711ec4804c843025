package api_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/api"
)

// consoleSession is a signed-in browser: its cookie and the form token of its pages.
type consoleSession struct {
	cookie string // name=value
	csrf   string
}

// form posts a console form as a browser of this site would.
func (e *env) form(path string, values url.Values, headers ...string) response {
	e.t.Helper()
	return e.send(e.request(http.MethodPost, path, strings.NewReader(values.Encode()), append([]string{
		"Content-Type", "application/x-www-form-urlencoded", "Accept", browserAccept, "Sec-Fetch-Site", "same-origin"}, headers...)...))
}

// browse GETs path as a browser, without following a redirect.
func (e *env) browse(path string, headers ...string) response {
	e.t.Helper()
	return e.send(e.request(http.MethodGet, path, nil, append([]string{"Accept", browserAccept}, headers...)...))
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn signs in on the console's form and reads the form token from the overview.
func (e *env) signIn(token string) consoleSession {
	e.t.Helper()
	r := e.form("/admin/sign-in", url.Values{"token": {token}, "next": {"/admin"}})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/admin" {
		e.t.Fatalf("sign in: %d %s", r.StatusCode, r.body)
	}
	var s consoleSession
	for _, c := range r.Cookies() {
		if c.Name == "pastebin_admin" {
			s.cookie = c.Name + "=" + c.Value
		}
	}
	page := e.page("/admin", "Cookie", s.cookie)
	m := csrfField.FindStringSubmatch(page.text())
	if page.StatusCode != http.StatusOK || m == nil {
		e.t.Fatalf("overview after sign-in: %d, form token found: %v", page.StatusCode, m != nil)
	}
	s.csrf = m[1]
	return s
}

// TestConsoleSession: pages send a browser without a session to the sign-in form; the right token
// starts a session held in a cookie that is not the token, that scripts cannot read and that no
// other site's request carries; the server keeps only its hash; signing out ends it on the server.
func TestConsoleSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	if r := e.browse("/admin/runs"); r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/admin/sign-in?next=%2Fadmin%2Fruns" {
		t.Errorf("a page without a session: %d to %q", r.StatusCode, r.Header.Get("Location"))
	}
	if r := e.page("/admin/sign-in"); r.StatusCode != http.StatusOK || !strings.Contains(r.text(), `type="password"`) {
		t.Errorf("sign-in page: %d", r.StatusCode)
	}
	if r := e.form("/admin/sign-in", url.Values{"token": {"not the admin token at all"}}); r.StatusCode != http.StatusUnauthorized ||
		len(r.Cookies()) != 0 || !strings.Contains(r.text(), "not the admin token") {
		t.Errorf("a wrong token: %d, cookies %v", r.StatusCode, r.Cookies())
	}
	r := e.form("/admin/sign-in", url.Values{"token": {adminToken}, "next": {"https://elsewhere.example/"}})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/admin" {
		t.Errorf("sign in asking to go elsewhere: %d to %q, want /admin", r.StatusCode, r.Header.Get("Location"))
	}
	c := r.Cookies()[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/admin" || c.Secure || strings.Contains(c.Value, adminToken) {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, for /admin, not the token", c)
	}
	secret, _ := base64.RawURLEncoding.DecodeString(c.Value)
	hash := sha256.Sum256(secret)
	if n := e.count(`SELECT count(*) FROM admin_sessions WHERE secret_hash = $1 AND expires_at > now() + interval '11 hours'`, hash[:]); n != 1 {
		t.Errorf("the server keeps %d sessions under the cookie's hash, want 1 for 12 hours", n)
	}

	s := e.signIn(adminToken)
	if r := e.page("/admin/runs", "Cookie", s.cookie); r.StatusCode != http.StatusOK {
		t.Fatalf("runs page with a session: %d", r.StatusCode)
	}
	if r := e.form("/admin/sign-out", url.Values{"csrf": {s.csrf}}, "Cookie", s.cookie); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: %d %s", r.StatusCode, r.body)
	}
	if r := e.browse("/admin/runs", "Cookie", s.cookie); r.StatusCode != http.StatusSeeOther {
		t.Errorf("the cookie of a signed-out session still opens pages: %d", r.StatusCode)
	}
	if n := e.count(`SELECT count(*) FROM admin_audit WHERE action IN ('sign-in', 'sign-out') AND via = 'console'`); n != 3 {
		t.Errorf("%d sign-ins and sign-outs in the audit log, want 3", n)
	}
}

// TestConsoleSessionEndsWithItsToken: a replica configured with another admin token (a rotation)
// does not accept the sessions signed in with the old one.
func TestConsoleSessionEndsWithItsToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	s := e.signIn(adminToken)
	rotated := e.replica()
	sum := sha256.Sum256([]byte("the rotated admin token"))
	rotated.cfg.AdminTokenHash, rotated.deps.Registry = sum[:], prometheus.NewRegistry()
	rotated.srv.Config.Handler = api.NewServer(rotated.cfg, rotated.deps)
	if r := rotated.browse("/admin", "Cookie", s.cookie); r.StatusCode != http.StatusSeeOther {
		t.Errorf("a session of the old token on the rotated replica: %d, want 303 to sign in", r.StatusCode)
	}
}

// TestConsoleFormsRefuseOtherSites: a form that does not come from the session's own pages (no
// form token, or sent from another site, as the browser says) changes nothing.
func TestConsoleFormsRefuseOtherSites(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	p := e.create("kept", "")
	s := e.signIn(adminToken)
	takedown := url.Values{"code": {p.code}, "reason": {"forged"}}
	for name, tt := range map[string]struct {
		csrf    string
		headers []string
	}{
		"no form token":        {"", nil},
		"another form token":   {strings.Repeat("A", 43), nil},
		"cross-site fetch":     {s.csrf, []string{"Sec-Fetch-Site", "cross-site"}},
		"another origin":       {s.csrf, []string{"Sec-Fetch-Site", "", "Origin", "https://evil.example"}},
		"another site, no key": {"", []string{"Sec-Fetch-Site", "same-site"}},
	} {
		v := url.Values{"csrf": {tt.csrf}}
		for k, vs := range takedown {
			v[k] = vs
		}
		r := e.form("/admin/takedown", v, append([]string{"Cookie", s.cookie}, tt.headers...)...)
		if r.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, r.StatusCode)
		}
	}
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusOK {
		t.Fatalf("a refused form took the paste down: %d", r.StatusCode)
	}
	takedown.Set("csrf", s.csrf)
	if r := e.form("/admin/takedown", takedown, "Cookie", s.cookie); r.StatusCode != http.StatusOK || !strings.Contains(r.text(), "is taken down") {
		t.Errorf("the console's own form: %d", r.StatusCode)
	}
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusGone {
		t.Errorf("after the console's takedown: %d, want 410", r.StatusCode)
	}
}

// TestConsoleSignInRateLimited: wrong tokens on the sign-in form count against the client's
// allowance of wrong admin tokens; past the limit even the right token is refused until the
// allowance earns one back (3 a minute: one every 20 seconds).
func TestConsoleSignInRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withAdminFailures(api.Rate{Requests: 3, Window: time.Minute}))
	for range 5 { // an empty form is no guess: it costs nothing
		if r := e.form("/admin/sign-in", url.Values{"token": {" "}}); r.StatusCode != http.StatusBadRequest {
			t.Fatalf("empty token: %d, want 400", r.StatusCode)
		}
	}
	for i := range 3 {
		if r := e.form("/admin/sign-in", url.Values{"token": {"a wrong guess of the token"}}); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i+1, r.StatusCode)
		}
	}
	r := e.form("/admin/sign-in", url.Values{"token": {adminToken}})
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "20" || len(r.Cookies()) != 0 {
		t.Errorf("the right token past the limit: %d, Retry-After %q, cookies %v", r.StatusCode, r.Header.Get("Retry-After"), r.Cookies())
	}
}

func TestConsoleOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{"/admin", "/admin/sign-in", "/admin/blocked"} {
		if r := e.page(path); r.StatusCode != http.StatusNotFound || !strings.Contains(r.text(), "PASTEBIN_ADMIN_TOKEN") {
			t.Errorf("%s without an admin token: %d", path, r.StatusCode)
		}
	}
}

// TestConsolePages renders every page with a session and follows a run to its end as the page's
// script does, by asking the run's address for JSON.
func TestConsolePages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	p := e.create("listed", "")
	s := e.signIn(adminToken)
	if r := e.form("/admin/blocked", url.Values{"csrf": {s.csrf}, "target": {e.srv.URL + "/" + p.code}, "reason": {"r"}, "take_down": {"true"}},
		"Cookie", s.cookie); r.StatusCode != http.StatusOK || !strings.Contains(r.text(), "1 paste taken down") {
		t.Errorf("block form: %d", r.StatusCode)
	}
	r := e.form("/admin/runs", url.Values{"csrf": {s.csrf}}, "Cookie", s.cookie)
	if r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/admin/runs/") {
		t.Fatalf("run now: %d to %q", r.StatusCode, r.Header.Get("Location"))
	}
	run := r.Header.Get("Location")
	status := ""
	for deadline := time.Now().Add(time.Minute); status != "finished" && time.Now().Before(deadline); {
		r := e.get(run, "Cookie", s.cookie, "Accept", "application/json")
		var v struct{ Status string }
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatalf("run as JSON: %d %s", r.StatusCode, r.body)
		}
		status = v.Status
		time.Sleep(20 * time.Millisecond)
	}
	if status != "finished" {
		t.Fatalf("the run is %q after a minute", status)
	}
	for _, path := range []string{"/admin", "/admin/runs", run, "/admin/takedown", "/admin/blocked", "/admin/audit"} {
		r := e.page(path, "Cookie", s.cookie)
		if r.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, r.StatusCode)
			continue
		}
		checkPageHeaders(t, r, "no-store")
	}
	if a := e.page("/admin/audit", "Cookie", s.cookie).text(); !strings.Contains(a, "block") || !strings.Contains(a, "cleanup") {
		t.Errorf("the audit page lacks the block and the run")
	}
}

// TestConsoleUnblockExpiryAndRefresh: the blocked list's unblock button lets the content be created
// again; a session past its expiry opens nothing; a live run's page reloads itself without
// JavaScript, and stops once the run has ended.
func TestConsoleUnblockExpiryAndRefresh(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	s := e.signIn(adminToken)
	p := e.create("blocked, then not", "")
	if r := e.form("/admin/blocked", url.Values{"csrf": {s.csrf}, "target": {e.srv.URL + "/" + p.code}, "reason": {"r"}},
		"Cookie", s.cookie); r.StatusCode != http.StatusOK {
		t.Fatalf("block form: %d", r.StatusCode)
	}
	if r := e.send(e.request(http.MethodPost, "/", strings.NewReader("blocked, then not"))); r.StatusCode != http.StatusUnavailableForLegalReasons {
		t.Fatalf("a create of blocked content: %d, want 451", r.StatusCode)
	}
	hash := sha256.Sum256([]byte("blocked, then not"))
	r := e.form("/admin/blocked/"+hex.EncodeToString(hash[:])+"/unblock", url.Values{"csrf": {s.csrf}, "reason": {"appeal"}}, "Cookie", s.cookie)
	if r.StatusCode != http.StatusOK || !strings.Contains(r.text(), "no longer blocked") {
		t.Errorf("unblock: %d", r.StatusCode)
	}
	if r := e.send(e.request(http.MethodPost, "/", strings.NewReader("blocked, then not"))); r.StatusCode != http.StatusCreated {
		t.Errorf("a create once unblocked: %d, want 201", r.StatusCode)
	}

	live := e.count(`INSERT INTO cleanup_runs (trigger, workers) VALUES ('admin', 1) RETURNING id`)
	ended := e.count(`INSERT INTO cleanup_runs (trigger, workers, status, finished_at) VALUES ('admin', 1, 'finished', now()) RETURNING id`)
	for id, want := range map[int]bool{live: true, ended: false} {
		page := e.page(fmt.Sprintf("/admin/runs/%d", id), "Cookie", s.cookie).text()
		if got := strings.Contains(page, `<noscript><meta http-equiv="refresh"`); got != want {
			t.Errorf("run %d's page reloads itself without JavaScript: %v, want %v", id, got, want)
		}
	}

	e.exec(`UPDATE admin_sessions SET expires_at = now() - interval '1 second'`)
	if r := e.browse("/admin", "Cookie", s.cookie); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/admin/sign-in") {
		t.Errorf("an expired session: %d to %q, want 303 to sign in", r.StatusCode, r.Header.Get("Location"))
	}
}
