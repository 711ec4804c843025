package expiry

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestPacingLandsUnderTheKnee: on a plant shaped like the heavy day's (users' p99 flat up to a
// knee, steep past it), the controller climbs from its floor and settles under the knee: within
// 15% of the highest rate that keeps the p99 within budget, with the users' p99 over budget in
// at most one window in twenty once it has settled.
func TestPacingLandsUnderTheKnee(t *testing.T) {
	t.Parallel()
	for seed := range uint64(5) {
		pl := heavyDayPlant(seed)
		s := newSimulation(t, pl, 1, autoPacing())
		s.run(3 * time.Minute)
		from := s.now
		s.run(10 * time.Minute)
		best := pl.best(1.5)
		if mean := pl.meanRate(from, s.now); mean < 0.85*best || mean > best {
			t.Errorf("seed %d: settled at %.0f pastes/s on average, want within 15%% under %.0f", seed, mean, best)
		}
		if over := s.overBudget(from, s.now, 1.5); over > 0.05 {
			t.Errorf("seed %d: users' p99 over budget in %.0f%% of the windows, want at most 5%%", seed, 100*over)
		}
	}
}

// TestPacingSlowdownStartsAndEnds: the database slows down (the knee falls to a third) for five
// minutes: within half a minute the rate is cut under the new knee, and the users' p99 is back
// within budget; once the slowdown ends the rate climbs back to the front within ten minutes.
func TestPacingSlowdownStartsAndEnds(t *testing.T) {
	t.Parallel()
	pl := heavyDayPlant(7)
	s := newSimulation(t, pl, 1, autoPacing())
	s.run(5 * time.Minute)
	pl.knee /= 3
	s.run(30 * time.Second)
	if r := s.rate(); r > pl.best(1.5) {
		t.Errorf("30 s into the slowdown the rate is %.0f, over the %.0f the budget allows now", r, pl.best(1.5))
	}
	from := s.now
	s.run(4*time.Minute + 30*time.Second)
	if over := s.overBudget(from, s.now, 1.5); over > 0.05 {
		t.Errorf("during the slowdown the users' p99 was over budget in %.0f%% of the windows", 100*over)
	}
	pl.knee *= 3
	s.run(10 * time.Minute)
	if r := pl.meanRate(s.now.Add(-time.Minute), s.now); r < 0.85*pl.best(1.5) {
		t.Errorf("ten minutes after the slowdown ended the rate is %.0f, want back within 15%% of %.0f", r, pl.best(1.5))
	}
}

// TestPacingReplicasShareOneController: two and three replicas pace one drain: one of them at a
// time runs the controller, every one follows the pace it publishes, and together they land where
// one replica does.
func TestPacingReplicasShareOneController(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 3} {
		pl := heavyDayPlant(uint64(n))
		s := newSimulation(t, pl, n, autoPacing())
		from := s.now.Add(3 * time.Minute)
		for s.now.Before(from.Add(10 * time.Minute)) {
			s.run(time.Second)
			if h := s.holders(); len(h) != 1 {
				t.Fatalf("%d replicas: %d controllers at %s: %v", n, len(h), s.now.Format(time.TimeOnly), h)
			}
			for _, rp := range s.replicas {
				if r := rp.p.rate(); r != s.rate() {
					t.Fatalf("%d replicas: %s follows %.0f pastes/s, the controller set %.0f", n, rp.p.member, r, s.rate())
				}
			}
		}
		if mean := pl.meanRate(from, s.now); mean < 0.85*pl.best(1.5) || mean > pl.best(1.5) {
			t.Errorf("%d replicas settled at %.0f pastes/s, want within 15%% under %.0f", n, mean, pl.best(1.5))
		}
	}
}

// TestPacingControllerDiesHoldingTheLease: the replica running the controller dies without
// letting its lease go. Once the lease runs out another replica takes the controller over, from
// the rate and the baseline its predecessor published: the drain neither falls back to its floor
// nor takes a baseline measured during the drain.
func TestPacingControllerDiesHoldingTheLease(t *testing.T) {
	t.Parallel()
	pl := heavyDayPlant(11)
	s := newSimulation(t, pl, 3, autoPacing())
	s.run(4 * time.Minute)
	holder := s.holders()
	before, baseline := s.rate(), s.replicas[0].p.current.Baseline
	for _, rp := range s.replicas {
		if rp.p.member == holder[0] {
			rp.alive = false
		}
	}
	s.run(s.leaseTTL + 2*time.Second)
	after := s.holders()
	if len(after) != 1 || slices.Equal(after, holder) {
		t.Fatalf("after %s holding the lease died: controllers %v", holder, after)
	}
	var successor *pacer
	for _, rp := range s.live() {
		if rp.p.member == after[0] {
			successor = rp.p
		}
	}
	if successor.steering.signals.baseline != baseline || baseline == 0 {
		t.Errorf("the successor's baseline is %g s, want its predecessor's %g s", successor.steering.signals.baseline, baseline)
	}
	if r := s.rate(); r < 0.7*before {
		t.Errorf("the rate fell from %.0f to %.0f when the controller changed hands", before, r)
	}
	s.run(5 * time.Minute)
	if mean := pl.meanRate(s.now.Add(-3*time.Minute), s.now); mean < 0.85*pl.best(1.5) {
		t.Errorf("under the successor the drain runs at %.0f pastes/s, want within 15%% of %.0f", mean, pl.best(1.5))
	}
}

// TestPacingFloorAndCeiling: a plant over budget at any rate holds the drain at its floor, never
// below and never stopped; one under budget at any rate lets it climb to the ceiling.
func TestPacingFloorAndCeiling(t *testing.T) {
	t.Parallel()
	p := autoPacing()
	p.MaxRate = 6000
	slow := heavyDayPlant(1)
	slow.knee = 10 // over budget from the first batch
	s := newSimulation(t, slow, 1, p)
	s.run(3 * time.Minute)
	if r, st := s.rate(), s.replicas[0].p.state(); r != p.MinRate || st.Reason != reasonMinRate {
		t.Errorf("on a plant over budget everywhere: %.0f pastes/s (%s), want the floor %.0f", r, st.Reason, p.MinRate)
	}
	fast := heavyDayPlant(2)
	fast.knee = 1e9
	s = newSimulation(t, fast, 1, p)
	s.run(3 * time.Minute)
	if r, st := s.rate(), s.replicas[0].p.state(); r != p.MaxRate || st.Reason != reasonMaxRate {
		t.Errorf("on a plant under budget everywhere: %.0f pastes/s (%s), want the ceiling %.0f", r, st.Reason, p.MaxRate)
	}
}

// TestPacingWithoutRedisTakesItsShare: while the deployment's bucket cannot be reached, a process
// draws from a bucket of its own at its share of the last rate it knew: that rate over the
// processes draining when it last counted them, not the whole rate each.
func TestPacingWithoutRedisTakesItsShare(t *testing.T) {
	t.Parallel()
	d := Deployment{Budget: awayBucket{}, Drainers: fixedRoster(3)}
	m := newMetrics(prometheus.NewRegistry(), &Expirer{})
	p := newPacer(Pacing{Mode: PacingOff, MaxRate: 3000}, 100, d, "replica-1", m, slog.New(slog.DiscardHandler))
	p.count(context.Background())
	if err := p.take(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if got := float64(p.local.Limit()); got != 1000 {
		t.Errorf("with Redis away the process draws at %.0f pastes/s, want its share of 3000 over 3 processes", got)
	}
}

type awayBucket struct{}

func (awayBucket) Take(context.Context, string, float64, int, int) (time.Duration, error) {
	return 0, errors.New("redis away")
}

type fixedRoster int

func (r fixedRoster) Join(context.Context, string) (int, error) { return int(r), nil }
func (fixedRoster) Leave(context.Context, string) error         { return nil }
