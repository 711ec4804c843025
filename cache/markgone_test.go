package cache_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"pastebin/cache"
	"pastebin/cache/cachetest"
)

// TestMarkGoneWhileClientThinksRedisDown: Redis is back and holds a live entry another replica
// wrote, but this process's client still fails every command at once (go-redis's dial circuit
// breaker stays open until its probe, once a second, succeeds). The delete's MarkGone must outlast
// that, or the deleted paste is served from the entry (invariant 5; found by the chaos soak).
func TestMarkGoneWhileClientThinksRedisDown(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	other, prefix := cachetest.New(t, logger)
	now := time.Now()
	ctx := context.Background()
	other.Put(ctx, other.Get(ctx, "abcdefghijk", now), cache.Paste{Code: "abcdefghijk", Size: 2, CreatedAt: now,
		Content: []byte("hi")}, time.Hour, now)

	var down atomic.Bool
	c := cache.Open(breakableOptions(t, &down), prefix, logger)
	t.Cleanup(func() { c.Close() })
	rdb := c.Client()
	down.Store(true)
	for range rdb.(*redis.Client).Options().PoolSize + 1 {
		_ = rdb.Ping(context.Background()).Err() // enough dial failures to open the breaker
	}
	down.Store(false)
	if err := rdb.Ping(context.Background()).Err(); err == nil {
		t.Fatal("the client's dial circuit breaker did not open: the test proves nothing")
	}

	if err := c.MarkGone(context.Background(), "abcdefghijk", "owner"); err != nil {
		t.Fatalf("MarkGone with Redis up: %v", err)
	}
	if l := other.Get(ctx, "abcdefghijk", time.Now()); l.Result != cache.Gone || l.Reason != "owner" {
		t.Errorf("after MarkGone, another replica's Get = %v %q, want Gone \"owner\"", l.Result, l.Reason)
	}
}

// breakableOptions are those of a client of the test Redis whose dials fail while down is set, as
// if Redis were stopped, with the production client's quick timeouts.
func breakableOptions(t *testing.T, down *atomic.Bool) *redis.Options {
	t.Helper()
	opts, err := redis.ParseURL(os.Getenv("PASTEBIN_REDIS_URL"))
	if err != nil {
		t.Fatalf("PASTEBIN_REDIS_URL: %v", err)
	}
	opts.PoolSize, opts.MaxRetries, opts.DialerRetries = 2, 1, 1
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if down.Load() {
			return nil, errors.New("connect: connection refused")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	return opts
}
