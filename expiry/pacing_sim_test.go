package expiry

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/cache"
)

// A simulated deployment for the pacing, on a fake clock: replicas (pacers) sharing a fake Redis
// (the pace record, the controller's lease, the roster, the count of claims) and a plant shaped
// like the one measured on the heavy day: the users' p99 flat at its level before the drain up to
// a knee in the drain's rate, and steep past it, each window's p99 with some noise. The pacers run
// their real steering (tickAt) on the fake clock; the drain runs at the rate they publish, or the
// database's capacity.
type plant struct {
	baseline float64 // seconds: the users' p99 with no drain
	knee     float64 // pastes/s
	slope    float64 // the p99's ratio grows by this per knee's worth of rate past the knee
	capacity float64 // pastes/s the drain reaches at most
	noise    float64 // sigma of the log-normal noise of one window's p99
	// lag is how long the users' latency takes to answer the drain's rate: a p99 at t is set by
	// the rates before t-lag.
	lag time.Duration
	// front, when set, is the p99's ratio measured at drain rates (ascending, from 0), in place of
	// knee and slope: ratio interpolates it on the logarithm of the rate.
	front []frontPoint
	// stalls is the share of windows that hold a stall (a finishing batch's, a checkpoint's), whose
	// p99 reads stallRatio times higher.
	stalls, stallRatio float64
	// day, when set, multiplies the users' p99 at a time whatever the drain does: the day's own
	// slow stretches, which the drain did not make.
	day     func(time.Time) float64
	rng     *rand.Rand
	history []ratePoint
}

// dayBetween is a day whose own latency is factor times its level over (from, to), and its level
// otherwise; a zero to: from then on.
func dayBetween(from, to time.Time, factor float64) func(time.Time) float64 {
	return func(at time.Time) float64 {
		if at.After(from) && (to.IsZero() || at.Before(to)) {
			return factor
		}
		return 1
	}
}

type ratePoint struct {
	at   time.Time
	rate float64
}

type frontPoint struct{ rate, ratio float64 }

// ratio is the users' p99 over its baseline at drain rate r, without noise.
func (pl *plant) ratio(r float64) float64 {
	if pl.front == nil {
		return 1 + max(0, r/pl.knee-1)*pl.slope
	}
	for i := 1; i < len(pl.front); i++ {
		lo, hi := pl.front[i-1], pl.front[i]
		if r <= hi.rate || i == len(pl.front)-1 {
			if lo.rate == 0 { // linear from no drain to the first step
				return lo.ratio + (hi.ratio-lo.ratio)*min(r, hi.rate)/hi.rate
			}
			f := math.Log(min(r, hi.rate)/lo.rate) / math.Log(hi.rate/lo.rate)
			return lo.ratio + (hi.ratio-lo.ratio)*f
		}
	}
	return 1
}

// best is the highest rate at which the p99 stays within budget: the front's point to land on.
func (pl *plant) best(budget float64) float64 {
	if pl.front == nil {
		return min(pl.capacity, pl.knee*(1+(budget-1)/pl.slope))
	}
	lo, hi := 0.0, pl.capacity
	for range 60 {
		if mid := (lo + hi) / 2; pl.ratio(mid) <= budget {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// tailRate is the drain's rate that sets the users' p99 over (from, to]: a p99 over all of a
// window's requests is set by its slower stretches (with a third of them twice as slow, it reads
// about four fifths of that), modelled as the rate its seconds stay under two thirds of the time.
func (pl *plant) tailRate(from, to time.Time) float64 {
	from, to = from.Add(-pl.lag), to.Add(-pl.lag)
	var rates []float64
	for _, p := range pl.history {
		if p.at.After(from) && !p.at.After(to) {
			rates = append(rates, p.rate)
		}
	}
	if len(rates) == 0 {
		return 0
	}
	return twoThirds(rates)
}

// twoThirds is the value under which two thirds of vs stay: where the plant's p99 over a span
// sets it from the span's parts.
func twoThirds(vs []float64) float64 {
	slices.Sort(vs)
	return vs[2*(len(vs)-1)/3]
}

// meanRate is the drain's mean rate over (from, to].
func (pl *plant) meanRate(from, to time.Time) float64 {
	sum, n := 0.0, 0
	for _, p := range pl.history {
		if p.at.After(from) && !p.at.After(to) {
			sum, n = sum+p.rate, n+1
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// Read is the users' latencies over (from, to], as every replica would have published them. Each
// 10 seconds of it has a p99 of its own, with its noise and, at times, a stall; a p99 over all the
// requests of several is set by their slower ones, modelled as the 10 seconds under which two
// thirds of them stay.
func (pl *plant) Read(_ context.Context, from, to time.Time) (cache.Latencies, error) {
	var p99s []float64
	for end := to; end.After(from); end = end.Add(-plantWindow) {
		start := end.Add(-plantWindow)
		if start.Before(from) {
			start = from
		}
		p99 := pl.baseline * pl.ratio(pl.tailRate(start, end)) * math.Exp(pl.noise*pl.rng.NormFloat64())
		if pl.rng.Float64() < pl.stalls {
			p99 *= pl.stallRatio
		}
		if pl.day != nil {
			p99 *= pl.day(end)
		}
		p99s = append(p99s, p99)
	}
	return latenciesWithP99(twoThirds(p99s), 1_000_000), nil
}

// plantWindow is the span of each of the plant's p99s: the heavy day's steps measured their noise
// over 10 seconds.
const plantWindow = 10 * time.Second

// latenciesWithP99 makes latencies whose p99, as Latencies.Quantile reads it, is v: most of them
// in the first bucket, the rest in v's, so many that the quantile falls at v within it.
func latenciesWithP99(v float64, total int64) cache.Latencies {
	l := cache.Latencies{Counts: make([]int64, len(cache.LatencyBounds)+1), Total: total}
	k, lower := 0, 0.0
	for k < len(cache.LatencyBounds)-1 && cache.LatencyBounds[k] < v {
		lower = cache.LatencyBounds[k]
		k++
	}
	frac := (v - lower) / (cache.LatencyBounds[k] - lower)
	m := int64(math.Round(0.01 * float64(total) / (1 - min(frac, 0.999))))
	l.Counts[0], l.Counts[k] = total-m, m
	return l
}

// fakeRedis is what the replicas share.
type fakeRedis struct {
	now       *time.Time
	pace      []byte
	holder    string
	heldUntil time.Time
	claimed   int64
}

type fakeLease struct {
	r   *fakeRedis
	id  string
	ttl time.Duration
}

func (l fakeLease) Acquire(context.Context) (func(), error) {
	if l.r.holder != "" && l.r.now.Before(l.r.heldUntil) {
		return nil, cache.ErrLockHeld
	}
	l.r.holder, l.r.heldUntil = l.id, l.r.now.Add(l.ttl)
	return func() {
		if l.r.holder == l.id {
			l.r.holder = ""
		}
	}, nil
}

type fakeRecord struct{ r *fakeRedis }

func (f fakeRecord) Load(_ context.Context, v any) (bool, error) {
	if f.r.pace == nil {
		return false, nil
	}
	return true, json.Unmarshal(f.r.pace, v)
}

func (f fakeRecord) Store(_ context.Context, v any) error {
	var err error
	f.r.pace, err = json.Marshal(v)
	return err
}

type fakeCounter struct{ r *fakeRedis }

func (f fakeCounter) Add(_ context.Context, n int64) (int64, error) {
	f.r.claimed += n
	return f.r.claimed, nil
}

// simulation is a deployment of replicas on the plant.
type simulation struct {
	t        *testing.T
	now      time.Time
	plant    *plant
	redis    *fakeRedis
	replicas []*simReplica
	leaseTTL time.Duration
}

type simReplica struct {
	p     *pacer
	alive bool
}

func newSimulation(t *testing.T, pl *plant, replicas int, p Pacing) *simulation {
	s := &simulation{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), plant: pl, leaseTTL: 10 * time.Second}
	s.redis = &fakeRedis{now: &s.now}
	pl.history = append(pl.history, ratePoint{s.now, 0})
	for i := range replicas {
		id := fmt.Sprintf("replica-%d", i+1)
		d := Deployment{Controller: fakeLease{s.redis, id, s.leaseTTL}, Pace: fakeRecord{s.redis},
			Claimed: fakeCounter{s.redis}, Users: pl}
		m := newMetrics(prometheus.NewRegistry(), &Expirer{})
		pc := newPacer(p, simBatch, 1, d, id, m, slog.New(slog.DiscardHandler))
		s.replicas = append(s.replicas, &simReplica{p: pc, alive: true})
	}
	return s
}

const simBatch = 1000

// run advances the simulation by d, a second at a time: the drain runs a second at the rate in
// force (every replica follows the same pace), each live replica claims its share and steps its
// steering, and the holder of the lease keeps it alive.
func (s *simulation) run(d time.Duration) {
	ctx := context.Background()
	end := s.now.Add(d)
	for s.now.Before(end) {
		s.now = s.now.Add(time.Second)
		r := min(s.rate(), s.plant.capacity)
		s.plant.history = append(s.plant.history, ratePoint{s.now, r})
		live := s.live()
		for _, rp := range live {
			rp.p.claimedBatch(int(r / float64(len(live))))
			rp.p.tickAt(ctx, s.now)
			if s.redis.holder == rp.p.member {
				s.redis.heldUntil = s.now.Add(s.leaseTTL)
			}
		}
	}
}

func (s *simulation) live() []*simReplica {
	var out []*simReplica
	for _, rp := range s.replicas {
		if rp.alive {
			out = append(out, rp)
		}
	}
	return out
}

// rate is the rate the replicas follow now: the holder's, or the last published.
func (s *simulation) rate() float64 {
	for _, rp := range s.live() {
		return rp.p.rate()
	}
	return 0
}

// holders lists the live replicas that run a controller.
func (s *simulation) holders() []string {
	var out []string
	for _, rp := range s.live() {
		if rp.p.steering != nil {
			out = append(out, rp.p.member)
		}
	}
	return out
}

// settle runs the drain from its start for warm, then for span, and returns the drain's mean rate
// over span and the users' p99 over it against their p99 over as long before the start, as the
// heavy day judges its paced window.
func (s *simulation) settle(warm, span time.Duration) (mean, p99Ratio float64) {
	baseline := s.p99(s.now.Add(-span), s.now)
	s.run(warm)
	from := s.now
	s.run(span)
	return s.plant.meanRate(from, s.now), s.p99(from, s.now) / baseline
}

// p99 is the users' p99 over (from, to], as the heavy day judges the paced window: over all its
// requests.
func (s *simulation) p99(from, to time.Time) float64 {
	l, _ := s.plant.Read(context.Background(), from, to)
	return l.Quantile(0.99)
}

func heavyDayPlant(seed uint64) *plant {
	return &plant{baseline: 0.004, knee: 4000, slope: 3, capacity: 20000, noise: 0.05,
		rng: rand.New(rand.NewPCG(seed, 1))}
}

// measuredPlant is the heavy day's front at a million (docs/performance.md, "Pacing the drain"):
// the users' p99 over a minute against the drain's rate, flat to 1,000 pastes/s (the steps read
// 1.07 to 1.16 there, smoothed to 1.1) and crossing 1.5 at about 2,360. Its 10-second pieces are
// as noisy as that run's: single windows read 1.1 to 1.3 at rates whose minute read 1.07 to 1.16.
func measuredPlant(seed uint64) *plant {
	return &plant{baseline: 0.0035, capacity: 31738, noise: 0.05, stalls: 0.1, stallRatio: 1.25, lag: measuredLag,
		front: []frontPoint{{0, 1}, {250, 1.1}, {1000, 1.1}, {2000, 1.33}, {4000, 2.03}, {8000, 3.38}, {31738, 26.6}},
		rng:   rand.New(rand.NewPCG(seed, 1))}
}

func autoPacing() Pacing {
	p := DefaultPacing()
	p.MinRate = 100
	return p
}

// measuredLag: how long the users' p99 took to answer the drain's rate in the heavy day's first
// climb (docs/heavyday-10m-g.md, its plot): the rate passed the front's crossing about 20 s
// before the users' p99 rose.
const measuredLag = 20 * time.Second
