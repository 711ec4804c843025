package cache_test

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"pastebin/cache"
	"pastebin/cache/cachetest"
)

// TestSharedState: a record one process writes and another reads; a roster that counts its
// members until they leave or go silent; a counter every process adds to. On one server and on a
// cluster.
func TestSharedState(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, func(t *testing.T, kind cachetest.Kind) {
		ctx := context.Background()
		a, prefix := cachetest.NewOf(t, kind, slog.New(slog.DiscardHandler))
		type state struct{ Rate float64 }
		var got state
		if ok, err := a.NewRecord("pace", time.Minute).Load(ctx, &got); ok || err != nil {
			t.Fatalf("an unwritten record: %v, %v", ok, err)
		}
		if err := a.NewRecord("pace", time.Minute).Store(ctx, state{Rate: 3000}); err != nil {
			t.Fatal(err)
		}
		if ok, err := a.NewRecord("pace", time.Minute).Load(ctx, &got); !ok || err != nil || got.Rate != 3000 {
			t.Errorf("the record read back: %+v, %v, %v", got, ok, err)
		}

		r := a.NewRoster("drainers", 300*time.Millisecond)
		for i, join := range []struct {
			member  string
			weight  int
			members int
			sum     int
		}{{"a", 1, 1, 1}, {"b", 4, 2, 5}, {"c", 2, 3, 7}, {"a", 1, 3, 7}} {
			got, err := r.Join(ctx, join.member, join.weight)
			if want := (cache.Headcount{Members: join.members, Weight: join.sum}); err != nil || got != want {
				t.Fatalf("join %d (%s): %+v, %v; want %+v", i, join.member, got, err, want)
			}
		}
		if err := r.Leave(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		if got, err := r.Join(ctx, "a", 1); err != nil || got != (cache.Headcount{Members: 2, Weight: 5}) {
			t.Errorf("after c left: %+v, %v; want a and b, weighing 5", got, err)
		}
		time.Sleep(200 * time.Millisecond)
		if _, err := r.Join(ctx, "b", 4); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // a goes silent past the roster's time to live; b not
		if got, err := r.Join(ctx, "d", 3); err != nil || got != (cache.Headcount{Members: 2, Weight: 7}) {
			t.Errorf("after a went silent: %+v, %v; want b and d, weighing 7", got, err)
		}
		// Either key alone may be evicted: a member without its weight counts one, and a weight
		// without its member goes.
		if err := a.Client().HSet(ctx, prefix+"roster:{drainers}:weights", "gone", 100).Err(); err != nil {
			t.Fatal(err)
		}
		if err := a.Client().HDel(ctx, prefix+"roster:{drainers}:weights", "b").Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := r.Join(ctx, "d", 3); err != nil || got != (cache.Headcount{Members: 2, Weight: 4}) {
			t.Errorf("b's weight lost, a member's lost: %+v, %v; want b and d, weighing 1 and 3", got, err)
		}
		if kept, err := a.Client().HExists(ctx, prefix+"roster:{drainers}:weights", "gone").Result(); err != nil || kept {
			t.Errorf("the weight of a member not in the roster: kept %v, %v; want it gone", kept, err)
		}

		k := a.NewCounter("claimed")
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() { _, _ = k.Add(ctx, 100) })
		}
		wg.Wait()
		if n, err := k.Add(ctx, 0); err != nil || n != 1000 {
			t.Errorf("counter: %d, %v; want 1000", n, err)
		}
	})
}

// TestLatencyWindows: two processes count their requests' latencies; once a window is over each
// adds its counts to Redis, and either reads both together, with a p99 within a bucket of the
// true one.
func TestLatencyWindows(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, _ := cachetest.New(t, slog.New(slog.DiscardHandler))
	w1, w2 := a.NewLatencyWindows("users"), a.NewLatencyWindows("users")
	go w1.Run(ctx)
	go w2.Run(ctx)
	start := time.Now()
	for i := range 1000 { // 990 at 1 ms, 10 at 50 ms: the p99 is between the two
		d := time.Millisecond
		if i%100 == 0 {
			d = 50 * time.Millisecond
		}
		w1.Observe(d)
		w2.Observe(d)
	}
	time.Sleep(2*cache.LatencyWindow + 200*time.Millisecond) // the window is over and published
	l, err := w1.Read(ctx, start.Add(-cache.LatencyWindow), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if l.Total != 2000 {
		t.Fatalf("read %d latencies, want both processes' 2000", l.Total)
	}
	if p50 := l.Quantile(0.5); math.Abs(p50-0.001) > 0.00025 {
		t.Errorf("p50 %.4f s, want about 1 ms", p50)
	}
	if p995 := l.Quantile(0.995); p995 < 0.040 || p995 > 0.060 {
		t.Errorf("p99.5 %.4f s, want in the 50 ms bucket", p995)
	}
}
