package expiry

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// A simulated drain for the controller, on a fake clock: batches of 1000 finish one after the other
// at the pace the limit allows (or the database's capacity), each taking the latency the database
// gives at that pace. The controller is pure logic, so this drives it exactly as the pacer does.
type simulation struct {
	c        *controller
	now      time.Time
	capacity float64 // pastes/s the drain reaches with no limit
	latency  func(rate float64) time.Duration
	cutsAt   []time.Time
}

const simBatch = 1000

func newSimulation(p Pacing, maxRate, capacity float64, latency func(float64) time.Duration) *simulation {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &simulation{c: newController(p, maxRate, simBatch, now), now: now, capacity: capacity, latency: latency}
}

// run advances the simulation by d and returns the lowest and highest limit it saw.
func (s *simulation) run(d time.Duration) (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	end := s.now.Add(d)
	for i := 0; s.now.Before(end) && i < 1_000_000; i++ {
		rate := min(s.c.limit, s.capacity)
		s.now = s.now.Add(time.Duration(simBatch / rate * float64(time.Second)))
		cuts := s.c.cuts
		limit := s.c.observe(s.now, simBatch, s.latency(rate))
		if s.c.cuts > cuts {
			s.cutsAt = append(s.cutsAt, s.now)
		}
		lo, hi = min(lo, limit), max(hi, limit)
	}
	return lo, hi
}

func autoPacing(target time.Duration, minRate float64) Pacing {
	return Pacing{Mode: PacingAuto, MinRate: minRate, Target: target}
}

// TestControllerSlowsAndRecovers: a drain whose finishing transactions take 70 ms at full speed,
// under a 100 ms target, is left alone; while the database adds 300 ms to each, the limit falls to
// the minimum and no further; once the slowness ends the limit climbs back and is lifted.
func TestControllerSlowsAndRecovers(t *testing.T) {
	t.Parallel()
	slow := false
	s := newSimulation(autoPacing(100*time.Millisecond, 500), math.Inf(1), 20000, func(rate float64) time.Duration {
		d := 30*time.Millisecond + time.Duration(rate*2*float64(time.Microsecond))
		if slow {
			d += 300 * time.Millisecond
		}
		return d
	})
	if lo, _ := s.run(time.Minute); !math.IsInf(lo, 1) || s.c.reason != "" {
		t.Fatalf("at 70 ms under a 100 ms target the limit went down to %g (%s), want none", lo, s.c.reason)
	}
	slow = true
	lo, _ := s.run(time.Minute)
	if lo != 500 || s.c.limit != 500 || s.c.reason != reasonDatabaseSlow {
		t.Errorf("after a slow minute: limit %g (lowest %g), reason %q; want the minimum 500, database_slow", s.c.limit, lo, s.c.reason)
	}
	slow = false
	for i := 0; i < 18 && !math.IsInf(s.c.limit, 1); i++ {
		s.run(5 * time.Second)
	}
	if !math.IsInf(s.c.limit, 1) || s.c.reason != "" {
		t.Errorf("90 s after the slowness: limit %g, reason %q; want lifted", s.c.limit, s.c.reason)
	}
}

// TestControllerSettles: where the latency crosses the target at 8000 pastes/s, with noise, the
// limit comes down to below that within a few cuts, then creeps towards it and is trimmed back by
// mild cuts: it stays within a few percent of where the target binds, not a sawtooth.
func TestControllerSettles(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	s := newSimulation(autoPacing(100*time.Millisecond, 500), math.Inf(1), 20000, func(rate float64) time.Duration {
		d := 20e-3 + rate*10e-6 // 100 ms at 8000/s
		return time.Duration(d * (0.9 + 0.2*rng.Float64()) * float64(time.Second))
	})
	s.run(time.Minute)
	lo, hi := s.run(5 * time.Minute)
	if lo < 0.85*8000 || hi > 1.05*8000 {
		t.Errorf("limit between %.0f and %.0f over 5 settled minutes; want within 85-105%% of the 8000/s where the target binds", lo, hi)
	}
	if s.c.signal > 0.105 {
		t.Errorf("smoothed latency %.1f ms, want at most the 100 ms target and a little noise", s.c.signal*1000)
	}
}

// TestControllerCeiling: with a ceiling, the limit starts there, never goes above it, and returns to
// it (reason max_rate) when the slowness is over.
func TestControllerCeiling(t *testing.T) {
	t.Parallel()
	slow := false
	s := newSimulation(autoPacing(100*time.Millisecond, 200), 5000, 20000, func(rate float64) time.Duration {
		if slow {
			return 400 * time.Millisecond
		}
		return 20 * time.Millisecond
	})
	if _, hi := s.run(30 * time.Second); hi != 5000 || s.c.reason != reasonMaxRate {
		t.Errorf("limit up to %g (%s), want the ceiling 5000, max_rate", hi, s.c.reason)
	}
	slow = true
	if lo, _ := s.run(time.Minute); lo != 200 || s.c.reason != reasonDatabaseSlow {
		t.Errorf("slow: limit down to %g (%s), want the minimum 200, database_slow", lo, s.c.reason)
	}
	slow = false
	if _, hi := s.run(time.Minute); hi != 5000 || s.c.limit != 5000 || s.c.reason != reasonMaxRate {
		t.Errorf("after: limit %g (at most %g), reason %s; want back at the ceiling 5000, max_rate", s.c.limit, hi, s.c.reason)
	}
}

// TestControllerCooldown: one very slow batch (a lock held on purpose) cuts once, not once per
// batch that follows while the average comes down.
func TestControllerCooldown(t *testing.T) {
	t.Parallel()
	c := newController(autoPacing(100*time.Millisecond, 100), math.Inf(1), 1000, time.Unix(0, 0))
	now := time.Unix(0, 0)
	for i := 0; i < 20; i++ { // 10 batches a second at 20 ms
		now = now.Add(100 * time.Millisecond)
		c.observe(now, 1000, 20*time.Millisecond)
	}
	now = now.Add(3 * time.Second)
	c.observe(now, 1000, 3*time.Second)
	for i := 0; i < 10; i++ { // the next second, fast again, while the average still remembers
		now = now.Add(100 * time.Millisecond)
		c.observe(now, 1000, 20*time.Millisecond)
	}
	if c.cuts != 1 {
		t.Errorf("%d cuts after one slow batch, want 1", c.cuts)
	}
}

// TestControllerIgnoresShortBatches: a batch under half the batch size, at the end of a backlog,
// does not count as a slow full batch.
func TestControllerIgnoresShortBatches(t *testing.T) {
	t.Parallel()
	c := newController(autoPacing(100*time.Millisecond, 100), math.Inf(1), 1000, time.Unix(0, 0))
	c.observe(time.Unix(1, 0), 10, 90*time.Millisecond) // 9 s for a full batch, if scaled
	if c.cuts != 0 || !math.IsInf(c.limit, 1) {
		t.Errorf("a 10-paste batch cut the limit to %g", c.limit)
	}
}
