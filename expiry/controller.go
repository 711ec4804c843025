package expiry

import (
	"math"
	"time"
)

// Why the automatic pacing holds the drain below its ceiling.
const (
	reasonMaxRate      = "max_rate"      // the configured ceiling
	reasonDatabaseSlow = "database_slow" // the finishing transactions are slower than the target
)

// The controller's constants. See README, "Pacing the drain", for the measurements behind them.
const (
	smoothing   = 2 * time.Second // time constant of the latency and throughput averages
	cutFactor   = 0.7             // a cut leaves this much of the rate that was flowing
	lowWater    = 0.6             // below target*lowWater the limit rises; between, it holds
	riseTime    = 20 * time.Second
	minCooldown = 2 * time.Second // after a cut, the next waits at least this (and two batches)
	uncapAbove  = 1.5             // a limit this far above the best throughput seen binds nothing
)

// controller is the automatic pacing as pure logic, an AIMD loop over one signal: the latency of
// the finishing transaction, scaled to a full batch and smoothed. Above the target it cuts the
// limit to cutFactor of the throughput flowing at the time (not of the limit, which may be far above
// it or none), then waits for the cut to show before it may cut again. Below lowWater of the target
// it raises the limit by a fixed step per second, the drain's best throughput (or the ceiling) over
// riseTime, and lifts it altogether once it binds nothing. In between it holds: the hysteresis band
// where a drain that found its level stays. It never goes below minRate.
type controller struct {
	target           float64 // seconds, for a full batch
	minRate, maxRate float64 // pastes/s; maxRate +Inf: no ceiling
	batch            int

	limit      float64 // pastes/s; +Inf: none
	reason     string
	signal     float64 // smoothed finishing latency of a full batch, seconds; 0 before any sample
	throughput float64 // smoothed pastes/s finished
	best       float64 // highest smoothed throughput seen
	last       time.Time
	holdUntil  time.Time // no cut before this
}

func newController(target time.Duration, minRate, maxRate float64, batch int, now time.Time) *controller {
	c := &controller{target: target.Seconds(), minRate: minRate, maxRate: maxRate, batch: batch}
	c.reset(now)
	return c
}

// reset starts over, as at the beginning of a run: at the ceiling, no history.
func (c *controller) reset(now time.Time) {
	c.limit, c.reason, c.signal, c.throughput, c.best = c.maxRate, "", 0, 0, 0
	if !math.IsInf(c.maxRate, 1) {
		c.reason = reasonMaxRate
	}
	c.last, c.holdUntil = now, now
}

// observe takes one finished batch, rows pastes in d, and returns the limit (pastes/s, +Inf: none).
func (c *controller) observe(now time.Time, rows int, d time.Duration) float64 {
	dt := now.Sub(c.last).Seconds()
	if dt <= 0 {
		dt = 1e-3
	}
	c.last = now
	w := 1 - math.Exp(-dt/smoothing.Seconds())
	c.throughput += w * (float64(rows)/dt - c.throughput)
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
	}
	return c.limit
}

func (c *controller) cut(now time.Time) {
	if now.Before(c.holdUntil) {
		return
	}
	c.limit = max(c.minRate, min(c.limit, c.throughput)*cutFactor)
	c.reason = reasonDatabaseSlow
	// Let the cut show: the averages need a few time constants, and a slow drain a few batches.
	wait := max(minCooldown, smoothing, 2*time.Duration(float64(c.batch)/c.limit*float64(time.Second)))
	c.holdUntil = now.Add(wait)
}

func (c *controller) rise(dt float64) {
	if math.IsInf(c.limit, 1) {
		return
	}
	ref := c.maxRate
	if math.IsInf(ref, 1) {
		ref = c.best
	}
	c.limit += max(c.minRate, ref) / riseTime.Seconds() * dt
	switch {
	case c.limit >= c.maxRate:
		c.limit, c.reason = c.maxRate, reasonMaxRate
	case math.IsInf(c.maxRate, 1) && c.limit >= c.best*uncapAbove:
		c.limit, c.reason = math.Inf(1), ""
	}
}
