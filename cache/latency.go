package cache

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// LatencyWindow is how long each window of LatencyWindows is.
const LatencyWindow = 2 * time.Second

// latencyKeep is how long a window is kept in Redis: long enough for a level before a drain (ten
// minutes, expiry's baselineSpan) and some more.
const latencyKeep = 12 * time.Minute

// LatencyBounds are the upper bounds, in seconds, of the buckets latencies are counted in: fine
// from a fraction of a millisecond to a second (a p99 read from them is within about 12% of the
// true one), coarse above, since a p99 beyond a second is a broken budget whatever its value.
var LatencyBounds = func() []float64 {
	var b []float64
	for v := 0.0001; v < 1.0; v *= 1.25 {
		b = append(b, v)
	}
	return append(b, 1, 2.5, 5, 10, 30)
}()

// LatencyWindows gathers the latencies of every replica's requests in Redis, window by window:
// each process counts the current window's latencies in memory and, once the window is over, adds
// its counts to the window's hash (one HINCRBY per bucket it used, in one pipeline). Any process
// reads the windows of a span, every replica's counts added up. One key per window, so it works
// the same on a Redis Cluster. Redis down: the windows of that time are lost, and readers see none.
type LatencyWindows struct {
	rdb    redis.UniversalClient
	prefix string
	logger *slog.Logger
	outage Outage

	mu     sync.Mutex
	window int64 // the current window's number: Unix time / LatencyWindow
	counts []int64
}

// NewLatencyWindows returns the latency windows name.
func (c *Cache) NewLatencyWindows(name string) *LatencyWindows {
	return &LatencyWindows{rdb: c.rdb, prefix: c.prefix + "latency:" + name + ":", logger: c.logger,
		counts: make([]int64, len(LatencyBounds)+1)}
}

func windowOf(t time.Time) int64 { return t.UnixNano() / int64(LatencyWindow) }

// Observe counts one latency in the current window.
func (w *LatencyWindows) Observe(d time.Duration) {
	i := bucketOf(d.Seconds())
	w.mu.Lock()
	w.counts[i]++
	w.mu.Unlock()
}

func bucketOf(seconds float64) int {
	lo, hi := 0, len(LatencyBounds)
	for lo < hi {
		mid := (lo + hi) / 2
		if seconds <= LatencyBounds[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Run publishes each window once it is over, until ctx ends.
func (w *LatencyWindows) Run(ctx context.Context) {
	w.mu.Lock()
	w.window = windowOf(time.Now())
	w.mu.Unlock()
	for {
		next := time.Unix(0, (windowOf(time.Now())+1)*int64(LatencyWindow))
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
			w.publish(ctx)
		}
	}
}

// publish adds the window that just ended to Redis and starts the next.
func (w *LatencyWindows) publish(ctx context.Context) {
	w.mu.Lock()
	window, counts := w.window, w.counts
	w.window, w.counts = windowOf(time.Now()), make([]int64, len(LatencyBounds)+1)
	w.mu.Unlock()
	key := w.prefix + strconv.FormatInt(window, 10)
	_, err := w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range counts {
			if n > 0 {
				p.HIncrBy(ctx, key, strconv.Itoa(i), n)
			}
		}
		p.PExpire(ctx, key, latencyKeep)
		return nil
	})
	switch {
	case err != nil && w.outage.Failed():
		w.logger.Warn("redis unavailable: request latencies not published", "err", err)
	case err == nil && w.outage.Succeeded():
		w.logger.Info("request latencies published in redis again")
	}
}

// Read returns the latencies of the windows that ended in (from, to], every replica's together.
func (w *LatencyWindows) Read(ctx context.Context, from, to time.Time) (Latencies, error) {
	first, last := windowOf(from), windowOf(to)-1
	if last-first > int64(latencyKeep/LatencyWindow) {
		first = last - int64(latencyKeep/LatencyWindow)
	}
	cmds := make([]*redis.MapStringStringCmd, 0, last-first+1)
	_, err := w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n := first; n <= last; n++ {
			cmds = append(cmds, p.HGetAll(ctx, w.prefix+strconv.FormatInt(n, 10)))
		}
		return nil
	})
	if err != nil {
		return Latencies{}, err
	}
	l := Latencies{Counts: make([]int64, len(LatencyBounds)+1)}
	for _, cmd := range cmds {
		for field, v := range cmd.Val() {
			i, err1 := strconv.Atoi(field)
			n, err2 := strconv.ParseInt(v, 10, 64)
			if err1 == nil && err2 == nil && i >= 0 && i < len(l.Counts) {
				l.Counts[i] += n
				l.Total += n
			}
		}
	}
	return l, nil
}

// Latencies are counts of latencies by bucket (LatencyBounds, then one past the last bound).
type Latencies struct {
	Counts []int64
	Total  int64
}

// Quantile estimates the q-quantile in seconds, linearly within its bucket; NaN without latencies.
func (l Latencies) Quantile(q float64) float64 {
	if l.Total == 0 {
		return math.NaN()
	}
	rank := q * float64(l.Total)
	below, lower := 0.0, 0.0
	for i, n := range l.Counts {
		upper := LatencyBounds[min(i, len(LatencyBounds)-1)]
		if below+float64(n) >= rank && n > 0 {
			return lower + (upper-lower)*(rank-below)/float64(n)
		}
		below, lower = below+float64(n), upper
	}
	return lower
}
