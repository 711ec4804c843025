package expiry

import (
	"context"
	"fmt"
	"time"

	"pastebin/cache"
)

// Pacing modes (PASTEBIN_CLEANUP_PACING).
const (
	PacingOff  = "off"  // no automatic pacing; MaxRate alone, if set, is a ceiling
	PacingAuto = "auto" // the controller keeps the users' latency within LatencyBudget
)

// Pacing is how fast the deployment's drain may go (docs/design.md, "Pacing the drain"). The
// rates are for the whole deployment, every replica and worker together: the replicas draw from
// one token bucket in Redis.
type Pacing struct {
	Mode    string  // PacingOff or PacingAuto
	MaxRate float64 // pastes/s, a ceiling in every mode; 0: none
	MinRate float64 // pastes/s the automatic pacing never goes below
	// LatencyBudget is how far the users' p99 may rise over their level (before the drain, and read
	// again every levelEvery of it), as a ratio (auto): 1.5 lets it grow by half.
	LatencyBudget float64

	// timeScale multiplies every time of the controller's (its window, its tick, how fast it climbs)
	// and of the signals'; 0: 1. Tests shorten them all at once.
	timeScale float64
}

// DefaultPacing is the pacing the README documents.
func DefaultPacing() Pacing {
	return Pacing{Mode: PacingAuto, MinRate: 200, LatencyBudget: 1.5}
}

func (p Pacing) validate() error {
	switch {
	case p.Mode != PacingOff && p.Mode != PacingAuto:
		return fmt.Errorf("pacing %q: want %s or %s", p.Mode, PacingAuto, PacingOff)
	case p.MaxRate < 0 || p.MinRate < 0:
		return fmt.Errorf("pacing rates %g and %g must not be negative", p.MaxRate, p.MinRate)
	case p.Mode == PacingAuto && (p.MinRate <= 0 || p.LatencyBudget <= 1):
		return fmt.Errorf("automatic pacing needs a minimum rate above zero and a latency budget above 1")
	}
	return nil
}

// The controller's timing: it steps every controllerTick on the signal of the last
// controllerWindow, fifteen latency windows of cache.LatencyWindow. The window is as long as the
// signal's noise needs: on the heavy day at a million, the users' p99 over 10 s (3,000 requests,
// its 30th slowest) read 1.1 to 1.3 times the baseline at drain rates whose p99 over a minute was
// 1.07 to 1.16, as wide as the room between the aim and the budget, and one stalled finish set it.
// A p99 over all the window's requests (not the median of shorter windows') is what the users'
// p99 is judged by, and it rises as soon as a slow stretch fills a few of its hundredths: quick to
// show an overshoot, slow to forgive it.
const (
	controllerTick   = 2 * time.Second
	controllerWindow = 30 * time.Second
)

// scaled is d on the pacing's time scale.
func (p Pacing) scaled(d time.Duration) time.Duration {
	if p.timeScale > 0 {
		return time.Duration(float64(d) * p.timeScale)
	}
	return d
}

// Deployment is what the replicas share through Redis to pace the drain as one: the token bucket
// every worker draws a batch's tokens from, the lease under which one replica at a time runs the
// controller, the pace that controller publishes, the roster of the processes draining, the count
// of pastes they claimed, and the users' request latencies. The zero Deployment paces this process
// alone, as if it were the whole deployment.
type Deployment struct {
	Budget     tokenBucket
	Controller lock
	Pace       sharedRecord
	Drainers   roster
	Claimed    sharedCounter
	Users      latencySource
}

// tokenBucket is a token bucket in Redis (the GCRA limiter in cache).
type tokenBucket interface {
	// Reserve takes n tokens of the bucket key, which refills at perSecond up to burst tokens, in
	// the order callers ask: they are the caller's once wait has passed. Where that would be more
	// than most, it takes none (taken false), and wait says when to ask again.
	Reserve(ctx context.Context, key string, perSecond float64, burst, n int, most time.Duration) (taken bool, wait time.Duration, err error)
}

type sharedRecord interface {
	Load(ctx context.Context, v any) (bool, error)
	Store(ctx context.Context, v any) error
}

type roster interface {
	Join(ctx context.Context, member string, weight int) (cache.Headcount, error)
	Leave(ctx context.Context, member string) error
}

type sharedCounter interface {
	Add(ctx context.Context, n int64) (int64, error)
}

type latencySource interface {
	Read(ctx context.Context, from, to time.Time) (cache.Latencies, error)
}

// pace is the controller's decision, as it shares it with every replica.
type pace struct {
	Rate       float64   `json:"rate"` // pastes/s for the whole deployment; 0: no limit
	Reason     string    `json:"reason"`
	Signal     float64   `json:"signal"` // the latency over its level
	Aim        float64   `json:"aim"`    // where the controller holds the signal
	Spread     float64   `json:"spread"` // the users' aim is lowered by this (controller.usersAim)
	Source     string    `json:"source"` // sourceUsers or sourceDatabase
	Budget     float64   `json:"budget"`
	Baseline   float64   `json:"baseline_seconds"` // the users' level, their p99 before the drain or at its last read; 0: unknown
	Controller string    `json:"controller"`       // the process that runs the controller
	Began      time.Time `json:"began"`            // when this drain's controller first ran
	LevelAt    time.Time `json:"level_read_at"`    // when the users' level was last read
	// Reading is when the drain was held at its floor to read the users' level again, and Held the
	// controller's rate it goes back to then; zero while it is not.
	Reading time.Time `json:"reading_since"`
	Held    float64   `json:"held_rate"`
	At      time.Time `json:"at"`
}

// paceFresh is how recent a published pace must be for a controller taking over to carry on with
// its baseline, rather than begin a drain of its own (at least afterDrain: a drain begun later
// reads its level from afterDrain past that pace).
const paceFresh = 2 * time.Minute
