package cache_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"pastebin/cache"
	"pastebin/cache/cachetest"
)

// TestLock: one holder at a time; a second worker waits for the release, or gives up with
// ErrLockHeld; a lock that expired under its holder is not released by that holder's late release.
func TestLock(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, func(t *testing.T, kind cachetest.Kind) {
		ctx := context.Background()
		c, _ := cachetest.NewOf(t, kind, slog.New(slog.DiscardHandler))
		lock := c.NewLock("claim", time.Minute, 200*time.Millisecond)
		release, err := lock.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lock.Acquire(ctx); !errors.Is(err, cache.ErrLockHeld) {
			t.Fatalf("second Acquire while held: %v, want ErrLockHeld", err)
		}
		release()
		release2, err := lock.Acquire(ctx)
		if err != nil {
			t.Fatalf("Acquire after the release: %v", err)
		}
		release2()

		short := c.NewLock("short", 50*time.Millisecond, 10*time.Second)
		late, err := short.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		next, err := c.NewLock("short", time.Minute, 10*time.Second).Acquire(ctx) // waits out the first holder's TTL
		if err != nil {
			t.Fatalf("Acquire after the TTL: %v", err)
		}
		late() // the first holder wakes up: its release must not free the lock it lost
		if _, err := c.NewLock("short", time.Minute, 100*time.Millisecond).Acquire(ctx); !errors.Is(err, cache.ErrLockHeld) {
			t.Errorf("Acquire after a stale release: %v, want ErrLockHeld (the lock is the second holder's)", err)
		}
		next()
	})
}
