package expiry

import (
	"math"
	"time"
)

// Why the drain's rate is what it is, as the metrics, the run reports and the CLI name it.
const (
	reasonMaxRate    = "max_rate"    // held at the ceiling, PASTEBIN_CLEANUP_MAX_RATE
	reasonMinRate    = "min_rate"    // held at the floor: the latency is over its budget even there
	reasonRising     = "rising"      // the latency is under its aim: the rate climbs
	reasonAtBudget   = "at_budget"   // the latency is between its aim and its budget: the rate eases off
	reasonOverBudget = "over_budget" // the latency went over its budget: the rate was cut
	reasonNoSignal   = "no_signal"   // nothing to steer by yet: the rate holds
	// reasonReadingLevel: held at the floor while the users' level is read again (levelEvery).
	reasonReadingLevel = "reading_level"
)

// Where the controller's signal comes from.
const (
	sourceUsers    = "users"    // the users' request latency (p99) over its level
	sourceDatabase = "database" // the finishing transaction's latency over its own recent minimum
)

// The controller's law. docs/design.md, "Pacing the drain", gives the plant these are set for:
// the users' latency flat from no drain up to a knee, and steep past it.
const (
	// aimShare: the controller aims at this share of the budget in log terms (budget 1.5: 1.44),
	// under the budget by the noise of its signal on a quiet day. The measured fronts are shallow
	// where they cross the budget (1.41 at 2,000 pastes/s, 1.5 at 2,528 in run H), so every
	// hundredth of aim is worth some rate, and the drain settles where it aims: in run H, aiming
	// at 1.33, the users' p99 over the window read 1.32 at 1,405 pastes/s, 44% under the crossing;
	// aiming at 1.44 on the same data, 1.42 at 2,158, 15% under it. (An aim of 1.38 with a cut
	// every 30 s and a fast first climb took the users over the budget, 1.58.)
	aimShare = 0.9
	// riseDoubling: at the signal's level before the drain, the rate doubles in this time while it
	// is below the rate the last cut left (the knee), and in probeDoubling near or past it. One
	// signal window: the users' p99 answered the heavy day's first climb about 20 s late, and a
	// rate doubling every 10 s ran to 3.4 times the front's crossing before the signal showed it.
	riseDoubling  = 30 * time.Second
	probeDoubling = 2 * time.Minute
	kneeShare     = 0.8 // below kneeShare of the knee, the rate rises at riseDoubling
	// kneeForget: the knee doubles in this time, so a drain whose database recovered probes again,
	// and one whose noise cut it early does not stay there.
	kneeForget = 4 * time.Minute
	// deepestCut: a cut leaves the rate at aim/signal of itself, and at least this share of it: a
	// database that slowed to a third is met with one cut.
	deepestCut = 0.25
	// holdShare: after a cut, the next waits a signal window over holdShare. The signal, a p99 over
	// the whole window, shows a cut only once most of the window is past it; waiting for all of it
	// left the heavy day's users over budget for 100 s while cuts of a tenth came every 30 s. A
	// third of it (10 s) cut again before the users' latency, some 20 s late, could show the last.
	holdShare = 2
	// headroom: the rate stays within this multiple of the drain's throughput (anti-windup: a
	// limit the drain cannot reach binds nothing, and would take long to come down when it must).
	headroom = 2
	// databaseBudgetPower: the finishing transaction's latency, judged batch by batch, is far
	// noisier than a p99 over thousands of requests; steered by it, the controller allows the
	// budget raised to this power (1.5: 2.25), and aims at this share of that (1.5).
	databaseBudgetPower = 2
	databaseAimShare    = 0.5
	// spreadSpan: the aim is lowered by how far the users' p99 over this span reads above the
	// median of the controller's own signal over it (steering.spread): the heavy day's target is a
	// p99 over ten minutes, which reads the upper quartile of the 30-s signal, not its median. In
	// run L the signal's median read 1.39 after the first climb, its 75th percentile 1.52, and the
	// window's p99 1.54.
	spreadSpan = 5 * time.Minute
	// lowestAimShare: however wide that spread, the aim stays at this share of the budget in log
	// terms or more (budget 1.5: 1.2), where the measured fronts read at a few hundred pastes/s.
	lowestAimShare = 0.45
	// seriesGap: a cut this long after the last begins a new series of cuts.
	seriesGap = 2 * controllerWindow
	// excuseAfter: the signal over the budget this long with the drain at its floor is not the
	// drain's (controller.excuseTheDrain). Two windows: the users' p99 over a window answers the
	// rate some 20 s late, so after one window at the floor it still holds the rates before it.
	excuseAfter = 2 * controllerWindow
	// flatShare: a cut from a rate under this multiple of the floor leaves the knee where it was.
	// At a million the front was flat from the floor to about five times it (1.1 up to 1,000
	// pastes/s), so a signal over the budget there is taken for the day's: a drain starting on cold
	// pages, a stall. At ten million the steps there are as noisy as the day (1.53 at 266 and 1.08
	// at 1,001 in run R; 1.32 at 249 and 1.79 at 1,013 in run S), which neither confirms nor
	// refutes it; the rule is proven in simulation only. In run R (docs/heavyday-10m-r.md) a cut at
	// 261 pastes/s in the window's first minutes left the knee there, and the drain climbed from it
	// at the probe's pace: under 500 pastes/s for four minutes, near the crossing only after eight.
	flatShare = 4
)

// controller sets the drain's rate for the whole deployment from one signal: a latency as a ratio
// to its own level (1: no change). It works on the logarithm of the rate: under its aim the rate
// grows in proportion to the headroom left (an integral law: where the plant is flat, that is a
// steady exponential climb), between the aim and the budget it eases off the same way, and past the
// budget it cuts at once by aim/signal, and again every third of a signal window while the signal
// stays past it. It remembers the rate the cut left (the knee) and climbs slowly from there, so the
// limit settles under the rate that broke the budget instead of sawing across it. It never leaves
// [floor, ceiling], nor runs further than headroom above what the drain achieves; so it never stops
// the drain.
type controller struct {
	budget         float64 // a ratio: the users' (LatencyBudget)
	floor, ceiling float64 // pastes/s; ceiling +Inf: none
	window         time.Duration
	scale          func(time.Duration) time.Duration // the time scale of the law's constants

	rate      float64
	knee      float64 // pastes/s; +Inf before the budget was ever broken
	holdUntil time.Time
	lastCut   time.Time
	// before is the rate when the first cut of the last series came (usually the one that broke
	// the budget); floorOver, since when the signal has stayed over the budget with the rate at the
	// floor (zero: it has not).
	before    float64
	floorOver time.Time
	calmSince time.Time // since when the signal has stayed under the aim; zero: since before the drain, whose level the signal is measured against
	last      time.Time
	reason    string
	signal    float64
	source    string
	spread    float64 // the users' p99 over spreadSpan against the signal's median over it; 1: none
	aim       float64 // the signal's aim at the last step
}

func newController(p Pacing, floor, ceiling float64, now time.Time) *controller {
	c := &controller{budget: p.LatencyBudget, floor: min(floor, ceiling),
		ceiling: ceiling, window: p.scaled(controllerWindow), scale: p.scaled, rate: min(floor, ceiling),
		knee: math.Inf(1), last: now, reason: reasonNoSignal, spread: 1}
	c.aim = c.usersAim()
	return c
}

// reachedAim says whether the signal has reached its aim since the drain began: its first climb
// is over.
func (c *controller) reachedAim() bool { return !c.calmSince.IsZero() }

// step takes the signal at now (ok false: none this time) and the drain's throughput (pastes/s)
// and returns the rate.
func (c *controller) step(now time.Time, signal float64, source string, ok bool, throughput float64) float64 {
	dt := max(now.Sub(c.last).Seconds(), 0)
	c.last = now
	if !math.IsInf(c.knee, 1) {
		c.knee *= math.Exp(dt * math.Ln2 / c.scale(kneeForget).Seconds())
	}
	if !ok || signal <= 0 {
		c.reason = reasonNoSignal
		return c.rate
	}
	c.signal, c.source = signal, source
	budget, aim := c.budget, c.usersAim()
	if source == sourceDatabase {
		budget = math.Pow(c.budget, databaseBudgetPower)
		aim = math.Pow(budget, databaseAimShare)
	}
	c.aim = aim
	if signal >= aim {
		c.calmSince = now
	}
	switch {
	case signal > budget && now.Before(c.holdUntil):
		// The last cut has not shown in the signal yet.
	case signal > budget:
		c.cut(now, signal, aim)
	default:
		c.ease(now, dt, signal, aim)
	}
	c.clamp(throughput)
	c.excuseTheDrain(now, signal > budget)
	return c.rate
}

// cut cuts the rate by aim/signal, deepestCut at most, and leaves the knee there, unless the cut
// came from where the plant is flat (flatShare).
func (c *controller) cut(now time.Time, signal, aim float64) {
	if now.Sub(c.lastCut) > c.scale(seriesGap) {
		c.before = c.rate
	}
	from := c.rate
	c.rate *= max(deepestCut, aim/signal)
	if from >= flatShare*c.floor {
		c.knee = c.rate
	}
	c.holdUntil, c.lastCut = now.Add(c.window/holdShare), now
	c.reason = reasonOverBudget
}

// excuseTheDrain undoes what a series of cuts taught the knee once the signal has stayed over the
// budget for excuseAfter with the drain at its floor: the floor is set low enough never to
// break the budget on its own, so the users' latency rose for a reason of the day's (a stall of
// the disk, another tenant), and the cuts that followed it down say nothing of the rate the
// users can take. When the signal comes back under the aim, the rate climbs fast again to near
// the rate before the cuts, not slowly from the floor: run Q's window spent its last five minutes
// at the floor after two such stalls (docs/heavyday-10m-q.md).
func (c *controller) excuseTheDrain(now time.Time, over bool) {
	if !over || c.rate > c.floor {
		c.floorOver = time.Time{}
		return
	}
	if c.floorOver.IsZero() {
		c.floorOver = now
	}
	if now.Sub(c.floorOver) >= c.scale(excuseAfter) && c.before > c.knee {
		c.knee = c.before
	}
}

// resume carries on from now after the drain was held at its floor: the time it was held is not
// the controller's to integrate.
func (c *controller) resume(now time.Time) { c.last = now }

// usersAim is the aim for the users' signal: aimShare of the budget, lowered by the spread
// between the p99 the users feel over minutes and the signal's median (a noisy signal held at
// its aim puts the long p99 over it), and never under lowestAimShare of the budget.
func (c *controller) usersAim() float64 {
	spread := c.spread
	if !(spread > 1) { // NaN too
		spread = 1
	}
	return max(math.Pow(c.budget, lowestAimShare), math.Pow(c.budget, aimShare)/spread)
}

// ease moves the rate by the headroom under the aim, on the log scale: up under the aim, down
// between the aim and the budget. It climbs fast only below the knee and once the signal has
// stayed under the aim for a whole window: a window that still holds a time at or over the aim
// says little of the rate now.
func (c *controller) ease(now time.Time, dt, signal, aim float64) {
	doubling := c.scale(riseDoubling)
	if c.rate >= kneeShare*c.knee || now.Sub(c.calmSince) < c.window {
		doubling = c.scale(probeDoubling)
	}
	// 1 at the level before the drain, 0 at the aim, and never over 1: a signal under the level it
	// is read against says the level was read high (a stall in its span), not that there is more
	// room than at the level. In run K the level read the minute before the drain, the load alone's
	// p99 read 9.5 to 13.6 ms from minute to minute, the signal sat at 0.8 through the first
	// climb, and the rate doubled every 19 s to 1.8 times the front's crossing
	// (docs/heavyday-10m-k.md).
	e := min(1, math.Log(aim/signal)/math.Log(aim))
	c.rate *= math.Exp(e * dt * math.Ln2 / doubling.Seconds())
	c.reason = reasonRising
	if e < 0 {
		c.reason = reasonAtBudget
	}
}

func (c *controller) clamp(throughput float64) {
	upper := c.ceiling
	if throughput > 0 {
		upper = min(upper, max(c.floor, headroom*throughput))
	}
	switch {
	case c.rate >= c.ceiling:
		c.rate, c.reason = c.ceiling, reasonMaxRate
	case c.rate > upper:
		c.rate = upper
	case c.rate <= c.floor:
		c.rate = c.floor
		if c.reason == reasonOverBudget || c.reason == reasonAtBudget {
			c.reason = reasonMinRate
		}
	}
}
