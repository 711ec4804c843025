package cache_test

import (
	"context"
	"errors"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"pastebin/cache"
	"pastebin/cache/cachetest"
)

// TestLimiterTokens: a key takes n tokens at a time up to its burst, a look takes none, and a
// refund gives them back; two limiters on one Redis count one allowance, as replicas do.
func TestLimiterTokens(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, testLimiterTokens)
}

func testLimiterTokens(t *testing.T, kind cachetest.Kind) {
	logger := slog.New(slog.DiscardHandler)
	c, prefix := cachetest.NewOf(t, kind, logger)
	ctx := context.Background()
	a := cache.NewLimiter("drain", c.Client(), prefix, logger)
	b := cache.NewLimiter("drain", c.Client(), prefix, logger) // another replica
	limit := cache.Limit{Tokens: 10, Per: time.Hour}

	if v := a.Allow(ctx, "budget", limit, 6); !v.Allowed || v.Remaining != 4 || v.Local {
		t.Fatalf("6 of 10: got %+v, want allowed, 4 remaining, counted in Redis", v)
	}
	if v := b.Peek(ctx, "budget", limit, 4); !v.Allowed || v.Remaining != 4 {
		t.Fatalf("a look at 4 of the 4 left: got %+v, want allowed, 4 remaining", v)
	}
	v := b.Allow(ctx, "budget", limit, 5)
	if v.Allowed {
		t.Fatalf("5 of the 4 left, through the other replica: got %+v, want refused", v)
	}
	if want := 6 * time.Minute; v.RetryAfter < want-time.Minute || v.RetryAfter > want+time.Second {
		t.Errorf("retry after: got %v, want about %v (one token more, at 6 minutes a token)", v.RetryAfter, want)
	}
	if v := b.Peek(ctx, "budget", limit, 5); v.Allowed || v.RetryAfter <= 5*time.Minute {
		t.Errorf("a look at 5: got %+v, want refused, with a retry of about 6 minutes", v)
	}
	a.Refund(ctx, "budget", limit, 3)
	if v := b.Allow(ctx, "budget", limit, 7); !v.Allowed || v.Remaining != 0 {
		t.Errorf("7 after 3 given back: got %+v, want allowed, none remaining", v)
	}
	if v := a.Allow(ctx, "other", limit, 10); !v.Allowed {
		t.Errorf("another key: got %+v, want its own whole burst", v)
	}
}

// TestLimiterWithoutRedis: with Redis down the limiter counts in memory, says so, and still holds
// the limit, whose changes it follows.
func TestLimiterWithoutRedis(t *testing.T) {
	t.Parallel()
	l := cache.NewLimiter("drain", cachetest.Refused(t), "pbtest:", slog.New(slog.DiscardHandler))
	ctx := context.Background()
	limit := cache.Limit{Tokens: 2, Per: time.Hour, Burst: 3}

	if v := l.Allow(ctx, "budget", limit, 3); !v.Allowed || !v.Local || v.Remaining != 0 {
		t.Fatalf("3 of a burst of 3, Redis down: got %+v, want allowed, counted locally, none left", v)
	}
	if v := l.Allow(ctx, "budget", limit, 1); v.Allowed || v.RetryAfter < 29*time.Minute {
		t.Fatalf("one more: got %+v, want refused for about 30 minutes", v)
	}
	l.Refund(ctx, "budget", limit, 1)
	if v := l.Allow(ctx, "budget", limit, 1); !v.Allowed {
		t.Errorf("one given back: got %+v, want allowed", v)
	}
	faster := cache.Limit{Tokens: 3600, Per: time.Second, Burst: 3600} // a controller raised the rate
	if v := l.Allow(ctx, "budget", faster, 100); !v.Allowed && v.RetryAfter > time.Second {
		t.Errorf("100 at the raised rate: got %+v, want them within a second (at the old rate: 50 hours)", v)
	}
}

// TestLimiterReserves: reservations queue in the order they are asked, whichever replica asks,
// each served a token's time after the one before; one that would wait longer than its caller
// allows takes nothing; and what the queue still owes is paid at the rate of the next caller, not at
// the one it was reserved at. Without Redis nothing is reserved, and the caller is told.
func TestLimiterReserves(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, func(t *testing.T, kind cachetest.Kind) {
		logger := slog.New(slog.DiscardHandler)
		c, prefix := cachetest.NewOf(t, kind, logger)
		a := cache.NewLimiter("drain", c.Client(), prefix, logger)
		b := cache.NewLimiter("drain", c.Client(), prefix, logger) // another replica
		testLimiterReserves(t, a, b)
	})
	t.Run("without redis", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		l := cache.NewLimiter("drain", cachetest.Refused(t), "pbtest:", slog.New(slog.DiscardHandler))
		limit := cache.Limit{Tokens: 10, Per: time.Second}
		if r, err := l.Reserve(ctx, "budget", limit, 10, time.Second); !errors.Is(err, cache.ErrNotShared) || !errors.Is(err, syscall.ECONNREFUSED) || r.Taken {
			t.Errorf("Redis refusing: got %+v, %v; want nothing taken, ErrNotShared and Redis's error", r, err)
		}
		if r, err := l.Reserve(ctx, "budget", limit, 10, time.Second); !errors.Is(err, cache.ErrNotShared) || r.Taken {
			t.Errorf("just after: got %+v, %v; want nothing taken and ErrNotShared, Redis not asked", r, err)
		}
		if r, err := cache.NewLimiter("drain", nil, "pbtest:", slog.New(slog.DiscardHandler)).Reserve(ctx, "budget", limit, 1, time.Second); !errors.Is(err, cache.ErrNotShared) || r.Taken {
			t.Errorf("a limiter without Redis: got %+v, %v; want nothing taken and ErrNotShared", r, err)
		}
	})
}

func testLimiterReserves(t *testing.T, a, b *cache.Limiter) {
	ctx := context.Background()
	limit := cache.Limit{Tokens: 10, Per: time.Second} // a token every 100 ms, a burst of 10
	const most = 2500 * time.Millisecond
	start := time.Now()
	// A wait is the queue's as of the first reservation, less the time since then.
	near := func(got, want time.Duration) bool { return got >= want-time.Since(start) && got <= want }
	reserve := func(l *cache.Limiter, limit cache.Limit, n int) cache.Reservation {
		t.Helper()
		r, err := l.Reserve(ctx, "budget", limit, n, most)
		if err != nil {
			t.Fatalf("reserve %d tokens: %v", n, err)
		}
		return r
	}
	for i, want := range []time.Duration{0, time.Second, 2 * time.Second} {
		if r := reserve([]*cache.Limiter{a, b}[i%2], limit, 10); !r.Taken || !near(r.Wait, want) {
			t.Fatalf("reservation %d of 10 tokens: got %+v, want taken after about %v", i+1, r, want)
		}
	}
	if r := reserve(b, limit, 10); r.Taken || !near(r.Wait, 500*time.Millisecond) {
		t.Fatalf("a fourth, due in 3 s where 2.5 s is the most: got %+v, want none taken, ask again in about 0.5 s", r)
	}
	if r := reserve(a, limit, 5); !r.Taken || !near(r.Wait, 2500*time.Millisecond) {
		t.Fatalf("5 more, after the refused 10: got %+v, want taken in about 2.5 s (the refused counted nothing)", r)
	}
	// 35 tokens are queued, 3.5 s at the old rate: 0.35 s at ten times the rate, where 10 more wait
	// that long past the burst's 10. Held to the old spacing, they would wait 3.5 s, past the most.
	faster := cache.Limit{Tokens: 100, Per: time.Second, Burst: 10}
	if r := reserve(b, faster, 10); !r.Taken || !near(r.Wait, 350*time.Millisecond) {
		t.Errorf("10 at ten times the rate: got %+v, want taken in about 0.35 s", r)
	}
}
