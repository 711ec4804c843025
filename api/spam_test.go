package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"pastebin/api"
	"pastebin/blob/blobtest"
	"pastebin/cache"
	"pastebin/cache/cachetest"
	"pastebin/paste"
	"pastebin/store/storetest"
)

// withSpam turns the spam signal on at threshold, behind a trusted proxy on loopback, so that each
// request names its client in X-Forwarded-For.
func withSpam(threshold paste.SpamThreshold) envOption {
	return withConfig(func(c *api.Config) {
		c.SpamThreshold = threshold
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
}

// hotList is the answer of GET /admin/content/hot.
type hotList struct {
	Threshold *struct {
		Clients       int   `json:"clients"`
		WindowSeconds int64 `json:"window_seconds"`
	} `json:"threshold"`
	Contents []struct {
		ContentHash string   `json:"content_hash"`
		Clients     int      `json:"clients"`
		Hot         bool     `json:"hot"`
		Stored      bool     `json:"stored"`
		RefCount    int64    `json:"ref_count"`
		Blocked     bool     `json:"blocked"`
		Pastes      []string `json:"pastes"`
	} `json:"contents"`
}

func (e *env) hotList() hotList {
	e.t.Helper()
	r := e.get("/admin/content/hot", adminAuth...)
	var l hotList
	if err := json.Unmarshal(r.body, &l); err != nil || r.StatusCode != http.StatusOK {
		e.t.Fatalf("GET /admin/content/hot: %d %s", r.StatusCode, r.body)
	}
	return l
}

func hexHash(content string) string {
	h := sha256.Sum256([]byte(content))
	return hex.EncodeToString(h[:])
}

// createFrom creates content on one of the create routes as the client at addr, through the
// trusted proxy: route picks curl's POST, PUT, the JSON API or haste's.
func (e *env) createFrom(addr, content string, route int) {
	e.t.Helper()
	xff := []string{"X-Forwarded-For", addr}
	var req *http.Request
	switch route % 4 {
	case 0:
		req = e.request(http.MethodPost, "/", strings.NewReader(content), xff...)
	case 1:
		req = e.request(http.MethodPut, "/spam.txt", strings.NewReader(content), xff...)
	case 2:
		body, _ := json.Marshal(map[string]string{"content": content})
		req = e.request(http.MethodPost, "/api/v1/pastes", strings.NewReader(string(body)), append(xff, "Content-Type", "application/json")...)
	default:
		req = e.request(http.MethodPost, "/documents", strings.NewReader(content), xff...)
	}
	if r := e.do(req); r.StatusCode != http.StatusCreated && r.StatusCode != http.StatusOK {
		e.t.Errorf("create from %s (route %d): %d %s", addr, route%4, r.StatusCode, r.body)
	}
}

// TestSpamSignalBurst: forty clients (distinct addresses behind the trusted proxy) create the same
// content at once, on every create route, through two replicas: the signal counts forty distinct
// clients across both, the content is hot on both replicas' metrics, the admin API lists it first
// with its reference count and a few of its pastes, and Redis holds no address. Blocking it
// quiets the metric.
func TestSpamSignalBurst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withSpam(paste.SpamThreshold{Clients: 20, Window: 10 * time.Minute}))
	replicas := []*env{e, e.replica()}
	const spam = "cheap pills, click here"
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() { replicas[i%2].createFrom(fmt.Sprintf("203.0.113.%d", i+1), spam, i) })
	}
	wg.Wait()
	e.createFrom("198.51.100.9", "a note of my own", 0)

	l := e.hotList()
	if l.Threshold == nil || l.Threshold.Clients != 20 || l.Threshold.WindowSeconds != 600 {
		t.Errorf("threshold: %+v; want 20 in 600 s", l.Threshold)
	}
	if len(l.Contents) != 2 {
		t.Fatalf("hot contents: %+v; want the spam, then the note", l.Contents)
	}
	if c := l.Contents[0]; c.ContentHash != hexHash(spam) || c.Clients != 40 || !c.Hot || !c.Stored || c.RefCount != 40 || c.Blocked || len(c.Pastes) != 5 {
		t.Errorf("the spam: %+v; want 40 clients, hot, 40 references, 5 pastes named", c)
	}
	if c := l.Contents[1]; c.ContentHash != hexHash("a note of my own") || c.Clients != 1 || c.Hot || c.RefCount != 1 {
		t.Errorf("the note: %+v; want 1 client, not hot", c)
	}
	for i, r := range replicas {
		if got := r.metricValue("pastebin_content_hot"); got != 1 {
			t.Errorf("replica %d: pastebin_content_hot %v, want 1", i, got)
		}
		if got := r.metricValue("pastebin_content_hot_clients_max"); got != 40 {
			t.Errorf("replica %d: pastebin_content_hot_clients_max %v, want 40", i, got)
		}
	}
	noAddressesInRedis(t, e, "203.0.113.", "198.51.100.")

	body := strings.NewReader(`{"content_hash": "` + hexHash(spam) + `", "reason": "spam", "take_down": true}`)
	if r := e.do(e.request(http.MethodPost, "/admin/blocked", body, append(adminAuth, "Content-Type", "application/json")...)); r.StatusCode != http.StatusCreated {
		t.Fatalf("block: %d %s", r.StatusCode, r.body)
	}
	if got := e.metricValue("pastebin_content_hot"); got != 0 {
		t.Errorf("pastebin_content_hot %v once the content is blocked, want 0", got)
	}
	if c := e.hotList().Contents[0]; !c.Blocked || c.Stored || len(c.Pastes) != 0 {
		t.Errorf("the spam once blocked: %+v; want blocked, no pastes left", c)
	}
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
}

// noAddressesInRedis fails the test if a key of the test's Redis, or a member of a sorted set
// there, holds any of the addresses' beginnings.
func noAddressesInRedis(t *testing.T, e *env, addrs ...string) {
	t.Helper()
	ctx := context.Background()
	for _, k := range cachetest.Keys(t, e.rdb, e.prefix) {
		values := []string{k}
		if typ, _ := e.rdb.Type(ctx, k).Result(); typ == "zset" {
			values = append(values, e.rdb.ZRange(ctx, k, 0, -1).Val()...)
		}
		for _, v := range values {
			for _, a := range addrs {
				if strings.Contains(v, a) {
					t.Errorf("redis key %s holds a client's address: %q", k, v)
				}
			}
		}
	}
}

// TestSpamSignalQuiet: one client pasting the same thing twice, and even ten times, is one
// client: nothing is hot, whatever the threshold's low.
func TestSpamSignalQuiet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withSpam(paste.SpamThreshold{Clients: 2, Window: 10 * time.Minute}))
	e.createFrom("198.51.100.9", "my notes", 0)
	e.createFrom("198.51.100.9", "my notes", 2)
	for i := range 10 {
		e.createFrom("2001:db8::1:"+fmt.Sprint(i), "from one IPv6 network", i) // one /64: one client
	}
	l := e.hotList()
	if len(l.Contents) != 2 {
		t.Fatalf("contents: %+v", l.Contents)
	}
	for _, c := range l.Contents {
		if c.Clients != 1 || c.Hot {
			t.Errorf("%s: %d clients, hot %v; want one client, not hot", c.ContentHash[:12], c.Clients, c.Hot)
		}
	}
	if got := e.metricValue("pastebin_content_hot"); got != 0 {
		t.Errorf("pastebin_content_hot %v, want 0", got)
	}
	if got := e.metricValue("pastebin_content_hot_threshold"); got != 2 {
		t.Errorf("pastebin_content_hot_threshold %v, want 2", got)
	}
}

// TestSpamSignalRedisDown: with Redis away the signal cannot count, and every create still
// succeeds; the admin API says the list is unavailable (503), never 500.
func TestSpamSignalRedisDown(t *testing.T) {
	t.Parallel()
	dead := cache.Open(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1}, "pbtest:", testLogger)
	t.Cleanup(func() { dead.Close() })
	e := newEnv(t, withAdmin(adminToken, 1), withSpam(paste.SpamThreshold{Clients: 2, Window: time.Minute}),
		withDeps(func(d *api.Deps) { d.Cache = dead }))
	for i := range 5 {
		e.createFrom(fmt.Sprintf("203.0.113.%d", i+1), "spam while redis is down", i)
	}
	if n := e.refCount("spam while redis is down"); n != 5 {
		t.Errorf("ref_count %d, want the 5 creates", n)
	}
	r := e.get("/admin/content/hot", adminAuth...)
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET /admin/content/hot with Redis down: %d %s, want 503", r.StatusCode, r.body)
	}
	if strings.Contains(e.get("/metrics").text(), "pastebin_content_hot ") {
		t.Errorf("pastebin_content_hot reported while unknown")
	}
}

// TestSpamSignalOff: with the threshold off, the list is empty and says so, and no create counts.
func TestSpamSignalOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1))
	e.create("anything", "")
	if l := e.hotList(); l.Threshold != nil || len(l.Contents) != 0 {
		t.Errorf("signal off: %+v", l)
	}
	if keys := cachetest.Keys(t, e.rdb, e.prefix+"hot:"); len(keys) != 0 {
		t.Errorf("signal off, keys written: %q", keys)
	}
	if r := e.get("/admin/content/hot?limit=0", adminAuth...); r.StatusCode != http.StatusBadRequest {
		t.Errorf("limit=0: %d, want 400", r.StatusCode)
	}
	if r := e.get("/admin/content/hot"); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the admin token: %d, want 401", r.StatusCode)
	}
}

// TestSpamConsoleBlock: the console's one-click block refuses a form without its session's token,
// shows a readable 400 for a malformed hash, and blocks and takes down every copy, in the audit log.
func TestSpamConsoleBlock(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmin(adminToken, 1), withSpam(paste.SpamThreshold{Clients: 2, Window: 10 * time.Minute}))
	for i := range 3 {
		e.createFrom(fmt.Sprintf("203.0.113.%d", i+1), "spam", i)
	}
	s := e.signIn(adminToken)
	page := e.browse("/admin/content/hot", "Cookie", s.cookie)
	if page.StatusCode != http.StatusOK || !strings.Contains(page.text(), hexHash("spam")) {
		t.Fatalf("hot page: %d", page.StatusCode)
	}
	if r := e.form("/admin/content/hot", url.Values{"hash": {hexHash("spam")}}, "Cookie", s.cookie); r.StatusCode != http.StatusForbidden {
		t.Errorf("without the form token: %d, want 403", r.StatusCode)
	}
	r := e.form("/admin/content/hot", url.Values{"csrf": {s.csrf}, "hash": {"nothex"}}, "Cookie", s.cookie)
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(r.text(), "content_hash") {
		t.Errorf("a malformed hash: %d", r.StatusCode)
	}
	r = e.form("/admin/content/hot", url.Values{"csrf": {s.csrf}, "hash": {hexHash("spam")}, "reason": {""}}, "Cookie", s.cookie)
	if r.StatusCode != http.StatusOK || !strings.Contains(r.text(), "3 pastes taken down") {
		t.Fatalf("one-click block: %d %s", r.StatusCode, r.body)
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE status <> 'DELETED'`); n != 0 {
		t.Errorf("%d pastes left", n)
	}
	if n := e.count(`SELECT count(*) FROM admin_audit WHERE action = 'block' AND via = 'console' AND reason LIKE 'spam%'`); n != 1 {
		t.Errorf("%d block entries in the audit log, want 1", n)
	}
	storetest.Check(t, e.store.Pool(), blobtest.Keys(t, e.bucket)).Consistent(t)
}
