package cache_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pastebin/cache"
	"pastebin/cache/cachetest"
)

// TestMarkGoneWhileClientThinksRedisDown: Redis is back and holds a live entry another replica
// wrote, but this process's client still fails every command at once (go-redis's dial circuit
// breaker stays open until its probe, once a second, succeeds). The delete's MarkGone must outlast
// that, or the deleted paste is served from the entry (invariant 5; found by the chaos soak).
func TestMarkGoneWhileClientThinksRedisDown(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, testMarkGoneWhileClientThinksRedisDown)
}

func testMarkGoneWhileClientThinksRedisDown(t *testing.T, kind cachetest.Kind) {
	logger := slog.New(slog.DiscardHandler)
	other, prefix := cachetest.NewOf(t, kind, logger)
	now := time.Now()
	ctx := context.Background()
	// On a cluster, a breaker per master: an entry on each, each behind its own open breaker.
	codes := cachetest.OnEveryMaster(t, cachetest.ClientOf(t, kind), other.Key, func(i int) string { return fmt.Sprintf("code%07d", i) })
	for _, code := range codes {
		other.Put(ctx, other.Get(ctx, code, now), cache.Paste{Code: code, Size: 2, CreatedAt: now,
			Content: []byte("hi")}, time.Hour, now)
	}

	var down atomic.Bool
	var mu sync.Mutex
	refused := map[string]int{} // dials refused, by address
	c := refusingCache(t, cachetest.URL(t, kind), prefix, cache.ClientOptions{
		PoolSize: breakablePoolSize, MaxRetries: 1, DialerRetries: 1,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
	}, func(addr string) bool {
		mu.Lock()
		defer mu.Unlock()
		if down.Load() {
			refused[addr]++
		}
		return down.Load()
	})
	rdb := c.Client()
	down.Store(true)
	for _, code := range codes {
		for range 3 * (breakablePoolSize + 1) {
			_ = rdb.Get(ctx, c.Key(code)).Err() // enough dial failures to open the breaker of its master
		}
	}
	// The breaker's probe dials at once when it opens, then once a second, and an open breaker
	// dials nothing else: Redis must refuse a probe after the loop before it is back, or a probe
	// scheduled late in a busy test binary (make test) finds it back and closes the breaker before
	// the check below. Each breaker then holds for the second after its probe failed.
	mu.Lock()
	before := maps.Clone(refused)
	mu.Unlock()
	probed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for addr, n := range before {
			if refused[addr] == n {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(5 * time.Second); !probed(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no probe of every open breaker within 5 s (refused dials before it: %v)", before)
		}
	}
	down.Store(false)
	for _, code := range codes {
		if err := rdb.Get(ctx, c.Key(code)).Err(); err == nil {
			t.Fatalf("the dial circuit breaker of %s's master did not open: the test proves nothing", code)
		}
	}

	for _, code := range codes {
		if err := c.MarkGone(ctx, code, "owner"); err != nil {
			t.Fatalf("MarkGone %s with Redis up: %v", code, err)
		}
		if l := other.Get(ctx, code, time.Now()); l.Result != cache.Gone || l.Reason != "owner" {
			t.Errorf("after MarkGone %s, another replica's Get = %v %q, want Gone \"owner\"", code, l.Result, l.Reason)
		}
	}
}

// breakablePoolSize is the pool of the client whose breaker the test opens: as many dial failures
// as that and one more open it.
const breakablePoolSize = 2

// refusingCache is a cache of the Redis at url, with every key under prefix, whose dials to an
// address fail while refuse says so, as if the node there were stopped.
func refusingCache(t *testing.T, url, prefix string, opts cache.ClientOptions, refuse func(addr string) bool) *cache.Cache {
	t.Helper()
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if refuse(addr) {
			return nil, errors.New("connect: connection refused")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	c, err := cache.OpenURL(url, opts, prefix, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
