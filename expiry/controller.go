package expiry

import (
	"math"
	"time"
)

// Why the drain runs below the speed it could.
const (
	reasonMaxRate      = "max_rate"      // the configured ceiling
	reasonDatabaseSlow = "database_slow" // the automatic pacing: finishing transactions over the target
)

// The controller's fixed ratios. docs/performance.md, "Pacing the drain", gives the measurements
// behind them.
const (
	deepestCut = 0.5 // a cut leaves target/signal of the throughput flowing, at least this much...
	mildestCut = 0.9 // ...and at most this much
	lowWater   = 0.6 // below target*lowWater the limit rises at full step; above, at creepStep of it
	creepStep  = 0.1
	uncapAbove = 1.2 // a limit this far above the best throughput seen binds nothing: lifted
)

// tuning holds the controller's time constants.
type tuning struct {
	smoothing   time.Duration // time constant of the latency and throughput averages
	riseTime    time.Duration // the limit rises by the best throughput (or the ceiling) in this time
	minCooldown time.Duration // after a cut, the next waits at least this long, and two batches
}

var defaultTuning = tuning{smoothing: 2 * time.Second, riseTime: 20 * time.Second, minCooldown: 2 * time.Second}

// controller is the automatic pacing as pure logic: an AIMD loop over one signal, the latency of the
// finishing transaction, scaled to a full batch and smoothed. Above the target it cuts the limit to
// cutFactor of the throughput flowing then (not of the limit, which may be far above it, or none),
// and lets the cut show before it may cut again. Below lowWater of the target it raises the limit by
// a fixed step per second, and lifts it back to the ceiling (or to none) once it binds nothing.
// Between lowWater and the target it creeps up at a quarter of that step: a drain that found its
// level stays near it, probing so slowly that the sawtooth of cut and creep is shallow and long,
// where a loop that rose at full speed up to the target would flap. The limit never goes below
// minRate, so a slow database slows the drain but never stops it.
type controller struct {
	target           float64 // seconds, for a full batch
	minRate, maxRate float64 // pastes/s; maxRate +Inf: no ceiling
	batch            int
	tuning

	limit      float64 // pastes/s; +Inf: none
	reason     string
	signal     float64 // smoothed finishing latency of a full batch, seconds; 0 before any sample
	throughput float64 // smoothed pastes/s finished; 0 before any sample
	best       float64 // the highest smoothed throughput seen
	last       time.Time
	holdUntil  time.Time // no cut before this
	cuts       int
}

func newController(p Pacing, maxRate float64, batch int, now time.Time) *controller {
	c := &controller{target: p.Target.Seconds(), minRate: min(p.MinRate, maxRate), maxRate: maxRate, batch: batch, tuning: p.tuning}
	if c.tuning == (tuning{}) {
		c.tuning = defaultTuning
	}
	c.limit, c.last, c.holdUntil = maxRate, now, now
	if !math.IsInf(maxRate, 1) {
		c.reason = reasonMaxRate
	}
	return c
}

// observe takes one finished batch, rows pastes in d, and returns the limit (pastes/s, +Inf: none).
func (c *controller) observe(now time.Time, rows int, d time.Duration) float64 {
	dt := max(now.Sub(c.last).Seconds(), 1e-6)
	c.last = now
	w := 1 - math.Exp(-dt/c.smoothing.Seconds())
	if c.throughput == 0 {
		c.throughput = float64(rows) / dt
	} else {
		c.throughput += w * (float64(rows)/dt - c.throughput)
	}
	c.best = max(c.best, c.throughput)
	if rows*2 < c.batch {
		return c.limit // a short batch (the end of a backlog) says little about a full one
	}
	sample := d.Seconds() * float64(c.batch) / float64(rows)
	if c.signal == 0 {
		c.signal = sample
	} else {
		c.signal += w * (sample - c.signal)
	}
	switch {
	case c.signal > c.target:
		c.cut(now)
	case c.signal < c.target*lowWater:
		c.rise(dt)
	default:
		c.rise(dt * creepStep)
	}
	return c.limit
}

func (c *controller) cut(now time.Time) {
	if now.Before(c.holdUntil) {
		return
	}
	factor := min(max(c.target/c.signal, deepestCut), mildestCut)
	c.limit = max(c.minRate, min(c.limit, c.throughput)*factor)
	c.reason = reasonDatabaseSlow
	c.cuts++
	// Let the cut show before judging again: the averages need a time constant, a slow drain a
	// couple of batches.
	twoBatches := time.Duration(2 * float64(c.batch) / c.limit * float64(time.Second))
	c.holdUntil = now.Add(max(c.minCooldown, c.smoothing, twoBatches))
}

func (c *controller) rise(dt float64) {
	if math.IsInf(c.limit, 1) || c.limit >= c.maxRate {
		return
	}
	ref := c.maxRate
	if math.IsInf(ref, 1) {
		ref = c.best
	}
	c.limit += max(c.minRate, ref) / c.riseTime.Seconds() * dt
	switch {
	case c.limit >= c.maxRate:
		c.limit, c.reason = c.maxRate, reasonMaxRate
	case math.IsInf(c.maxRate, 1) && c.limit >= c.best*uncapAbove:
		c.limit, c.reason = math.Inf(1), ""
	}
}
