package expiry

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
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
	rng      *rand.Rand
	history  []ratePoint
}

type ratePoint struct {
	at   time.Time
	rate float64
}

// ratio is the users' p99 over its baseline at drain rate r, without noise.
func (pl *plant) ratio(r float64) float64 { return 1 + max(0, r/pl.knee-1)*pl.slope }

// best is the highest rate at which the p99 stays within budget: the front's point to land on.
func (pl *plant) best(budget float64) float64 {
	return min(pl.capacity, pl.knee*(1+(budget-1)/pl.slope))
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

// Read is the users' latencies over (from, to], as every replica would have published them.
func (pl *plant) Read(_ context.Context, from, to time.Time) (cache.Latencies, error) {
	p99 := pl.baseline * pl.ratio(pl.meanRate(from, to)) * math.Exp(pl.noise*pl.rng.NormFloat64())
	return latenciesWithP99(p99, 1_000_000), nil
}

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
		pc := newPacer(p, simBatch, d, id, m, slog.New(slog.DiscardHandler))
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

// overBudget is the share of the signal windows of (from, to] whose p99 went over budget, noise
// included: what users would have seen.
func (s *simulation) overBudget(from, to time.Time, budget float64) float64 {
	over, n := 0, 0
	for at := from.Add(controllerWindow); !at.After(to); at = at.Add(controllerWindow) {
		l, _ := s.plant.Read(context.Background(), at.Add(-controllerWindow), at)
		if l.Quantile(0.99)/s.plant.baseline > budget {
			over++
		}
		n++
	}
	return float64(over) / float64(n)
}

func heavyDayPlant(seed uint64) *plant {
	return &plant{baseline: 0.004, knee: 4000, slope: 8, capacity: 20000, noise: 0.05,
		rng: rand.New(rand.NewPCG(seed, 1))}
}

func autoPacing() Pacing {
	p := DefaultPacing()
	p.MinRate = 100
	return p
}
