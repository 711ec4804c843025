package cache_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"pastebin/cache"
	"pastebin/cache/cachetest"
)

// TestLock: one holder at a time; a second worker waits for the release, or gives up with
// ErrLockHeld; a lock that expired under its holder is not released by that holder's late release.
// On a cluster, with locks on every master.
func TestLock(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, func(t *testing.T, kind cachetest.Kind) {
		ctx := context.Background()
		c, prefix := cachetest.NewOf(t, kind, slog.New(slog.DiscardHandler))
		rdb := cachetest.ClientOf(t, kind) // sees the cluster whatever the cache's client does
		names := cachetest.OnEveryMaster(t, rdb, func(name string) string { return prefix + "lock:" + name },
			func(i int) string { return fmt.Sprintf("claim-%d", i) })
		var releases []func()
		for _, name := range names {
			release, err := c.NewLock(name, time.Minute, 200*time.Millisecond).Acquire(ctx)
			if err != nil {
				t.Fatalf("Acquire %s: %v", name, err)
			}
			releases = append(releases, release)
		}
		if n, want := cachetest.MastersHolding(t, rdb, prefix+"lock:"), len(names); n != want {
			t.Fatalf("the held locks are on %d masters, want %d: the test would prove nothing", n, want)
		}
		for i, name := range names {
			lock := c.NewLock(name, time.Minute, 200*time.Millisecond)
			if _, err := lock.Acquire(ctx); !errors.Is(err, cache.ErrLockHeld) {
				t.Fatalf("second Acquire of %s while held: %v, want ErrLockHeld", name, err)
			}
			releases[i]()
			release, err := lock.Acquire(ctx)
			if err != nil {
				t.Fatalf("Acquire of %s after the release: %v", name, err)
			}
			release()
			testStaleRelease(t, c, name)
		}
	})
}

// testStaleRelease: a holder whose lock expired, and another took, does not free it.
func testStaleRelease(t *testing.T, c *cache.Cache, name string) {
	t.Helper()
	ctx := context.Background()
	late, err := c.NewLock(name, 50*time.Millisecond, 10*time.Second).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next, err := c.NewLock(name, time.Minute, 10*time.Second).Acquire(ctx) // waits out the first holder's TTL
	if err != nil {
		t.Fatalf("Acquire of %s after the TTL: %v", name, err)
	}
	late() // the first holder wakes up: its release must not free the lock it lost
	if _, err := c.NewLock(name, time.Minute, 100*time.Millisecond).Acquire(ctx); !errors.Is(err, cache.ErrLockHeld) {
		t.Errorf("Acquire of %s after a stale release: %v, want ErrLockHeld (the lock is the second holder's)", name, err)
	}
	next()
}
