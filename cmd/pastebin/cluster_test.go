package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"pastebin/cache"
	"pastebin/cache/cachetest"
)

// TestServeOnRedisCluster: with PASTEBIN_REDIS_URL naming the test Redis Cluster, serve counts the
// rate limits there, caches reads there, writes its delete markers there, and /readyz finds every
// master. Headers alone would not tell: serve counts in memory and reads the database when Redis
// fails. So the test looks in the cluster itself, with a client of its own, for keys on every
// master: a client that talks to its seed node alone would reach one master in three.
func TestServeOnRedisCluster(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["PASTEBIN_REDIS_URL"] = cachetest.URL(t, cachetest.Cluster)
	env["PASTEBIN_TRUSTED_PROXIES"] = "127.0.0.1/32" // X-Forwarded-For names the client: a rate count each
	base, stop := startServe(t, env)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("run after shutdown: %v", err)
		}
	}()
	ctx := context.Background()
	rdb := cachetest.ClientOf(t, cachetest.Cluster)
	prefix := env["PASTEBIN_REDIS_PREFIX"]
	clients := cachetest.OnEveryMaster(t, rdb, func(addr string) string { return prefix + "rate:create:" + addr },
		func(i int) string { return fmt.Sprintf("10.0.%d.%d", i/250, i%250+1) })
	pastes := pastesOnEveryMaster(t, base, rdb, prefix, clients)
	for _, addr := range clients {
		if n, err := rdb.Exists(ctx, prefix+"rate:create:"+addr).Result(); err != nil || n != 1 {
			t.Errorf("the creates of client %s left %d rate counts in the cluster (%v), want 1", addr, n, err)
		}
	}

	observer, err := cache.OpenURL(cachetest.URL(t, cachetest.Cluster), cache.ClientOptions{}, prefix, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	for _, p := range pastes {
		if got := httpGet(t, base+"/raw/"+p.code); got.status != http.StatusOK {
			t.Fatalf("read: %d %s", got.status, got.body)
		}
		if l := observer.Get(ctx, p.code, time.Now()); l.Result != cache.Hit {
			t.Errorf("after a read, the cluster answers %v for the paste, want its cached entry", l.Result)
		}
		deletePaste(t, base, p)
		if l := observer.Get(ctx, p.code, time.Now()); l.Result != cache.Gone || l.Reason != "owner" {
			t.Errorf("after a delete, the cluster answers %v %q for the paste, want its delete marker", l.Result, l.Reason)
		}
	}
	if got := httpGet(t, base+"/readyz"); !strings.Contains(got.body, `"redis":"ok"`) {
		t.Errorf("/readyz: %s, want redis ok", got.body)
	}
}

// pastesOnEveryMaster creates pastes, from each of clients in turn, until their cache keys lie on
// every master of the cluster rdb, and returns one paste for each master.
func pastesOnEveryMaster(t *testing.T, base string, rdb redis.UniversalClient, prefix string, clients []string) []pasteRef {
	t.Helper()
	masters := cachetest.Masters(t, rdb)
	byMaster := map[string]pasteRef{}
	for i := 0; len(byMaster) < len(masters) && i < 60; i++ {
		p := createPasteFrom(t, base, clients[i%len(clients)], fmt.Sprintf("on a cluster %d", i))
		if m := cachetest.MasterOf(t, rdb, prefix+"paste:"+p.code); byMaster[m] == (pasteRef{}) {
			byMaster[m] = p
		}
	}
	if len(byMaster) < len(masters) {
		t.Fatalf("60 pastes' cache keys lie on %d of the %d masters", len(byMaster), len(masters))
	}
	var out []pasteRef
	for _, p := range byMaster {
		out = append(out, p)
	}
	return out
}

// createPasteFrom creates a paste as the client at addr, behind a trusted proxy.
func createPasteFrom(t *testing.T, base, addr, content string) pasteRef {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/?expires_in=1h", strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-For", addr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-RateLimit-Limit") != "120" {
		t.Fatalf("create: %d, X-RateLimit-Limit %q: %s", resp.StatusCode, resp.Header.Get("X-RateLimit-Limit"), body)
	}
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if len(lines) != 2 {
		t.Fatalf("create answered %q", body)
	}
	return pasteRef{code: lines[0][strings.LastIndex(lines[0], "/")+1:], token: lines[1]}
}

func deletePaste(t *testing.T, base string, p pasteRef) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, base+"/api/v1/pastes/"+p.code, nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
}
