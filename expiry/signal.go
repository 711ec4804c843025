package expiry

import (
	"context"
	"slices"
	"sync"
	"time"
)

// The signal's rules (docs/design.md, "Pacing the drain").
const (
	// minUserRequests: the users' p99 is the signal when a window holds at least this many of their
	// requests; a p99 over fewer says little.
	minUserRequests = 200
	// baselineSpan: the users' level before the drain is their p99 over this span before the
	// controller first ran (less where a drain ran in it). Every signal is read against it until it
	// is read again (levelEvery), so its error is theirs: on the heavy day the
	// one-minute levels of the load alone before its steps read a standard deviation of 10% of
	// their mean on a quiet day, and a third apart on a noisy one (docs/performance.md, runs K and
	// N); over five minutes of windows with the measured front's noise, forty simulated drains
	// settled at 0.73 to 0.86 of the crossing, where over one minute 0.67 to 0.88. Ten minutes,
	// not five: the day drifts over minutes, and in run S (docs/heavyday-10m-s.md) the five before
	// the drain read a p99 of 7.2 ms where the ten read 6.0 (the replicas' own request logs), so
	// the controller held the users at 1.36 times its level and 1.64 times the ten minutes'. The
	// users' windows are kept twelve minutes (cache), and the pace that says when the last paced
	// drain was, as long (cmd/pastebin, paceTTL).
	baselineSpan = 10 * time.Minute
	// levelEvery: the users' level is read again after this much of a drain, with the drain held
	// at its floor for levelSettle (the users' latency answers the drain's rate some 20 s late)
	// and then levelRead, over which their p99 is read (signals.relevel): a level read once goes
	// stale over a drain of hours (10 million at 1,000 pastes/s is nearly three), as the day's
	// traffic rises and falls. It costs the drain 90 s at its floor in every 20 minutes.
	levelEvery  = 20 * time.Minute
	levelSettle = 30 * time.Second
	levelRead   = time.Minute
	// afterDrain: the level leaves out this long after the last drain's last pace: the users'
	// latency answers a drain's rate some 20 s late, and a run's outbox and purge come after its
	// drain. paceFresh leaves at least this much of the span.
	afterDrain = time.Minute
	// finishHorizon: the finishing transaction's latency is judged against its first quartile
	// over this span.
	finishHorizon = 5 * time.Minute
)

// signals gives the controller its signal: the users' p99 over their level (before the drain, and
// read again every levelEvery of it), read from every replica's latency windows, or, where too few
// requests come to judge by (the CLI, an idle night), the finishing transaction's latency over its
// own recent low (its first quartile over the last minutes). Both are ratios, 1 for no change: the
// second cancels what the table's size makes that latency, as TCP Vegas and Netflix's gradient
// limiter compare a round trip with the shortest ones seen lately.
type signals struct {
	users    latencySource // nil: none
	window   time.Duration
	horizon  time.Duration // finishHorizon
	baseline float64       // seconds; 0: unknown
	finishes *finishLog
}

// setBaseline takes the users' p99 over the span before now, from afterDrain past lastDrain on
// where that is later (a drain that ended since would read as the users' level), as their level
// before the drain; it leaves it unknown when too few requests came.
func (s *signals) setBaseline(ctx context.Context, lastDrain, now time.Time) {
	if s.users == nil {
		return
	}
	from := now.Add(-baselineSpan)
	if after := lastDrain.Add(afterDrain); after.After(from) {
		from = after
	}
	l, err := s.users.Read(ctx, from, now)
	if err == nil && l.Total >= minUserRequests {
		s.baseline = l.Quantile(0.99)
	}
}

// relevel reads the users' level now over (from, to], a span with the drain at its floor: the
// lower of its two halves' p99s, so a stall of the day's in one of them is not taken for the
// level (the lower of two reads is a little low, which holds the drain back, not the users); it
// leaves the level as it was when too few requests came. A read over a minute is noisier than
// the ten minutes before the drain, but one that kept part of the level before followed the day
// slowly: simulated, a level that rose by 60% held the drain under a fifth of the crossing for the
// twenty minutes after the first read with half of it kept, and at three quarters of it with none
// (TestPacingReadsTheLevelAgain).
func (s *signals) relevel(ctx context.Context, from, to time.Time) {
	if s.users == nil {
		return
	}
	mid := from.Add(to.Sub(from) / 2)
	first, err1 := s.users.Read(ctx, from, mid)
	second, err2 := s.users.Read(ctx, mid, to)
	if err1 == nil && err2 == nil && first.Total >= minUserRequests && second.Total >= minUserRequests {
		s.baseline = min(first.Quantile(0.99), second.Quantile(0.99))
	}
}

// read returns the signal at now and where it came from; ok is false while neither source has
// enough to say.
func (s *signals) read(ctx context.Context, now time.Time) (ratio float64, source string, ok bool) {
	if r, ok := s.usersOver(ctx, now.Add(-s.window), now); ok {
		return r, sourceUsers, true
	}
	current, low := s.finishes.excess(now, s.window, s.horizon)
	if current > 0 && low > 0 {
		return current / low, sourceDatabase, true
	}
	return 0, sourceDatabase, false
}

// usersOver is the users' p99 over (from, to] against their level; ok is false when it is unknown
// or too few requests came.
func (s *signals) usersOver(ctx context.Context, from, to time.Time) (ratio float64, ok bool) {
	if s.users == nil || s.baseline <= 0 {
		return 0, false
	}
	l, err := s.users.Read(ctx, from, to)
	if err != nil || l.Total < minUserRequests {
		return 0, false
	}
	return l.Quantile(0.99) / s.baseline, true
}

// finishLog keeps this process's finishing transactions' latencies, scaled to a full batch, for
// finishHorizon.
type finishLog struct {
	mu      sync.Mutex
	samples []finishSample
}

type finishSample struct {
	at      time.Time
	seconds float64
}

func (f *finishLog) add(at time.Time, seconds float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cut := 0
	for cut < len(f.samples) && at.Sub(f.samples[cut].at) > finishHorizon {
		cut++
	}
	f.samples = append(f.samples[cut:], finishSample{at, seconds})
}

// excess returns the median latency of the window before now (of the last few batches, when a
// slow drain finished fewer in it), and its recent low: the first quartile of the horizon's
// latencies, a minimum that one lucky batch does not set (0 where there is none).
func (f *finishLog) excess(now time.Time, window, horizon time.Duration) (current, low float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	current = f.quantile(now.Add(-window), now, 0.5)
	if n := len(f.samples); f.count(now.Add(-window), now) < minFinishes && n >= minFinishes &&
		now.Sub(f.samples[n-minFinishes].at) < horizon/2 {
		current = f.quantile(f.samples[n-minFinishes].at.Add(-time.Nanosecond), now, 0.5)
	}
	return current, f.quantile(now.Add(-horizon), now, 0.25)
}

// minFinishes is how many finishing transactions the database signal judges by at least.
const minFinishes = 3

func (f *finishLog) count(from, to time.Time) int {
	n := 0
	for _, s := range f.samples {
		if s.at.After(from) && !s.at.After(to) {
			n++
		}
	}
	return n
}

func (f *finishLog) quantile(from, to time.Time, q float64) float64 {
	var v []float64
	for _, s := range f.samples {
		if s.at.After(from) && !s.at.After(to) {
			v = append(v, s.seconds)
		}
	}
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[int(q*float64(len(v)-1))]
}
