package expiry

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"pastebin/store"
)

// Pacing modes (PASTEBIN_CLEANUP_PACING).
const (
	PacingOff  = "off"  // no automatic pacing; MaxRate alone, if set, is a ceiling
	PacingAuto = "auto" // slow down while the finishing transactions are slower than the target
)

// modeMaxRate is how a run report names PacingOff with a ceiling.
const modeMaxRate = "max_rate"

// Pacing is how fast one process's drain may go (docs/design.md, "Pacing the drain").
type Pacing struct {
	Mode    string        // PacingOff or PacingAuto
	MaxRate float64       // pastes/s, a ceiling in every mode; 0: none
	MinRate float64       // pastes/s the automatic pacing never goes below
	Target  time.Duration // auto: the finishing transaction of a full batch is kept under this

	tuning tuning // the controller's time constants; zero: defaultTuning (tests shorten them)
}

func (p Pacing) validate() error {
	switch {
	case p.Mode != PacingOff && p.Mode != PacingAuto:
		return fmt.Errorf("pacing %q: want %s or %s", p.Mode, PacingAuto, PacingOff)
	case p.MaxRate < 0 || p.MinRate < 0:
		return fmt.Errorf("pacing rates %g and %g must not be negative", p.MaxRate, p.MinRate)
	case p.Mode == PacingAuto && (p.MinRate <= 0 || p.Target <= 0):
		return fmt.Errorf("automatic pacing needs a minimum rate and a target above zero")
	}
	return nil
}

// pacer paces the claims of one process's workers: before each claim a worker waits for a batch's
// tokens from a token bucket, between batches, so the claim, the finishing transaction and the
// after-commit stage stay as they are; a paced drain is slower, never different. The bucket's rate
// is the ceiling, or what the controller sets in automatic mode.
type pacer struct {
	cfg     Pacing
	batch   int
	metrics *metrics
	logger  *slog.Logger

	mu     sync.Mutex
	lim    *rate.Limiter
	ctl    *controller // nil unless automatic
	waited time.Duration
}

func newPacer(cfg Pacing, batch int, m *metrics, logger *slog.Logger) *pacer {
	p := &pacer{cfg: cfg, batch: batch, metrics: m, logger: logger}
	p.start()
	return p
}

func (p *pacer) ceiling() float64 {
	if p.cfg.MaxRate > 0 {
		return p.cfg.MaxRate
	}
	return math.Inf(1)
}

// start begins a run: the ceiling again, and an empty bucket, so that the first batch of a run is
// paid for like the others and a run's rate stays under the ceiling however it is measured.
func (p *pacer) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.cfg.Mode == PacingAuto {
		p.ctl = newController(p.cfg, p.ceiling(), p.batch, now)
	}
	p.lim = rate.NewLimiter(toLimit(p.ceiling()), p.batch)
	p.lim.ReserveN(now, p.batch)
	p.waited = 0
	p.publish(p.ceiling())
}

// wait blocks until the bucket has given a batch's tokens; only a cancelled ctx ends it sooner. It
// takes them a tenth at a time, so that a limit the controller raises while a worker waits at a
// low one applies within a tenth of that wait.
func (p *pacer) wait(ctx context.Context) error {
	p.mu.Lock()
	lim := p.lim
	p.mu.Unlock()
	start := time.Now()
	var err error
	step := max(1, p.batch/10)
	for left := p.batch; left > 0 && err == nil; left -= step {
		err = lim.WaitN(ctx, min(step, left))
	}
	if d := time.Since(start); d > time.Millisecond {
		p.metrics.pacedSeconds.Add(d.Seconds())
		p.mu.Lock()
		p.waited += d
		p.mu.Unlock()
	}
	return err
}

// observe feeds a finishing transaction's latency to the controller, in automatic mode.
func (p *pacer) observe(rows int, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctl == nil || rows == 0 {
		return
	}
	now := time.Now()
	cuts, reason := p.ctl.cuts, p.ctl.reason
	limit := p.ctl.observe(now, rows, d)
	p.metrics.pacingSignal.Set(p.ctl.signal)
	if p.ctl.cuts > cuts {
		p.metrics.slowdowns.WithLabelValues(p.ctl.reason).Inc()
	}
	if p.ctl.cuts > cuts || p.ctl.reason != reason {
		p.logger.Info("cleanup pacing changed the rate limit", "rate_limit", limit, "reason", p.ctl.reason,
			"finish_seconds_per_batch", p.ctl.signal, "target_seconds", p.cfg.Target.Seconds())
	}
	if toLimit(limit) != p.lim.Limit() {
		p.lim.SetLimitAt(now, toLimit(limit))
		p.publish(limit)
	}
}

func (p *pacer) publish(limit float64) {
	if math.IsInf(limit, 1) {
		limit = 0
	}
	p.metrics.rateLimit.Set(limit)
}

// state is the pacing as a run report shows it.
func (p *pacer) state() store.Pacing {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := store.Pacing{Mode: p.cfg.Mode, WaitedSeconds: p.waited.Seconds()}
	if s.Mode == PacingOff && p.cfg.MaxRate > 0 {
		s.Mode, s.Reason = modeMaxRate, reasonMaxRate
	}
	if p.ctl != nil {
		s.Reason = p.ctl.reason
	}
	if l := p.lim.Limit(); l != rate.Inf {
		v := float64(l)
		s.RateLimit = &v
	}
	return s
}

func toLimit(r float64) rate.Limit {
	if math.IsInf(r, 1) {
		return rate.Inf
	}
	return rate.Limit(r)
}
