package expiry

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"pastebin/cache"
	"pastebin/store"
)

// budgetKey names the deployment's token bucket.
const budgetKey = "cleanup-budget"

// pacer paces this process's claims against the deployment's rate (docs/design.md, "Pacing the
// drain"): before each claim a worker takes a batch's tokens from the token bucket every replica
// draws from, a tenth at a time, queued behind the other workers' tenths. The claim,
// the finishing transaction and the after-commit stage stay as they are: a paced drain is slower,
// never different. While Redis is away, the process draws from a bucket of its own at its share of
// the last rate it knew: its part of the processes draining then, by what their workers take at once.
type pacer struct {
	cfg      Pacing
	batch    int
	workers  int // this process's
	shared   Deployment
	member   string // this process, in the roster of the processes draining
	metrics  *metrics
	logger   *slog.Logger
	finishes *finishLog

	mu       sync.Mutex
	current  pace            // the pace in force, as last known
	drainers cache.Headcount // whom the roster counted last: the processes draining, and their weights
	local    *rate.Limiter   // this process's own bucket; nil until a take needs it
	waited   time.Duration
	claimed  int64     // pastes claimed here since the last time they were added to the shared count
	total    int64     // the deployment's claims (or this process's, alone) at the last count
	holding  bool      // this process runs the controller
	steering *steering // while it does; only the steering goroutine touches it
	outage   cache.Outage
}

func newPacer(cfg Pacing, batch, workers int, shared Deployment, member string, m *metrics, logger *slog.Logger) *pacer {
	p := &pacer{cfg: cfg, batch: batch, workers: workers, shared: shared, member: member, metrics: m, logger: logger,
		finishes: &finishLog{}}
	p.current = p.startingPace()
	p.publish()
	return p
}

// startingPace is the pace before any controller spoke: the ceiling when off, the floor when auto.
func (p *pacer) startingPace() pace {
	if p.cfg.Mode == PacingOff {
		if p.cfg.MaxRate > 0 {
			return pace{Rate: p.cfg.MaxRate, Reason: reasonMaxRate}
		}
		return pace{}
	}
	return pace{Rate: p.floor(), Reason: reasonNoSignal, Budget: p.cfg.LatencyBudget}
}

func (p *pacer) ceiling() float64 {
	if p.cfg.MaxRate > 0 {
		return p.cfg.MaxRate
	}
	return math.Inf(1)
}

func (p *pacer) floor() float64 { return min(p.cfg.MinRate, p.ceiling()) }

// rate is the deployment's rate in force, pastes/s; +Inf: none.
func (p *pacer) rate() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current.Rate <= 0 {
		return math.Inf(1)
	}
	return p.current.Rate
}

// wait blocks until a batch's tokens are taken; only a cancelled ctx ends it sooner.
func (p *pacer) wait(ctx context.Context) error {
	start := time.Now()
	step := p.tokensAtOnce()
	var err error
	for left := p.batch; left > 0 && err == nil; left -= step {
		err = p.take(ctx, min(step, left))
	}
	if d := time.Since(start); d > time.Millisecond {
		p.metrics.pacedSeconds.Add(d.Seconds())
		p.mu.Lock()
		p.waited += d
		p.mu.Unlock()
	}
	return err
}

// take takes n tokens at the rate in force: from the deployment's bucket, or from this process's
// own at its share while Redis is away (and always, without a Deployment).
func (p *pacer) take(ctx context.Context, n int) error {
	for {
		if err := ctx.Err(); err != nil {
			return err // not a reservation the others would queue behind for nothing
		}
		r := p.rate()
		if math.IsInf(r, 1) {
			return nil
		}
		if p.shared.Budget == nil {
			return p.takeLocally(ctx, n, r)
		}
		// The bucket holds two batches: while every worker is busy claiming or finishing, it fills
		// for a batch's time more before tokens spill, and the deployment keeps its rate. With one,
		// three processes of three workers claimed at 2,945 to 2,971 pastes/s of a budget of 3,000
		// (TestOneBudgetForThreeProcesses); with two, at 2,982 to 3,013. The workers of every
		// replica queue for the tokens, so a process the machine starves of processor time keeps
		// its turns: with tokens served to whoever asked first once they were there, that test's
		// shares read 10–14% apart beside two busy loops, and 25% once in a make test.
		most := p.queueTime(r)
		taken, wait, err := p.shared.Budget.Reserve(ctx, budgetKey, r, 2*p.batch, n, most)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			p.redisFailed(err)
			return p.takeLocally(ctx, n, p.share(r))
		}
		p.redisWorks()
		if taken {
			return sleepCtx(ctx, wait)
		}
		// Refused, the queue being full: a rate changed meanwhile is seen when asking again.
		if err := sleepCtx(ctx, min(wait, most)); err != nil {
			return err
		}
	}
}

// tokensAtOnce is how many tokens a worker takes at a time.
func (p *pacer) tokensAtOnce() int { return max(1, p.batch/10) }

// weight is this process's part in the deployment's drain, as the roster of drainers counts it:
// the tokens its workers take at once.
func (p *pacer) weight() int { return max(1, p.workers) * p.tokensAtOnce() }

// queueTime is how long a worker may queue for its tokens at rate r: the time of what every
// draining worker takes at once, so that none is refused while each holds a reservation, and at
// least a batch's time.
func (p *pacer) queueTime(r float64) time.Duration {
	tokens := max(p.batch, p.drainersNow().Weight)
	return time.Duration(float64(tokens) / r * float64(time.Second))
}

// share is this process's share of rate r: its part of the processes draining.
func (p *pacer) share(r float64) float64 {
	return r * float64(p.weight()) / float64(p.drainersNow().Weight)
}

func (p *pacer) takeLocally(ctx context.Context, n int, r float64) error {
	p.mu.Lock()
	if p.local == nil {
		// It starts empty: no part of a run goes faster than its rate, its first batch included.
		p.local = rate.NewLimiter(rate.Limit(r), p.batch)
		p.local.ReserveN(time.Now(), p.batch)
	}
	if p.local.Limit() != rate.Limit(r) {
		p.local.SetLimit(rate.Limit(r))
	}
	lim := p.local
	p.mu.Unlock()
	return lim.WaitN(ctx, n)
}

// drainersNow is whom the roster counted last, never less than this process alone.
func (p *pacer) drainersNow() cache.Headcount {
	p.mu.Lock()
	defer p.mu.Unlock()
	return cache.Headcount{Members: max(1, p.drainers.Members), Weight: max(p.weight(), p.drainers.Weight)}
}

func (p *pacer) redisFailed(err error) {
	if p.outage.Failed() {
		p.logger.Warn("the deployment's budget is unreachable: the drain paces itself at its share of the last rate",
			"rate", p.rate(), "share", p.share(p.rate()), "processes", p.drainersNow().Members, "err", err)
	}
}

func (p *pacer) redisWorks() {
	if p.outage.Succeeded() {
		p.logger.Info("the deployment's budget is reachable again: the drain draws from it")
	}
}

// claimedBatch counts a batch this process claimed, for the deployment's throughput.
func (p *pacer) claimedBatch(n int) {
	p.mu.Lock()
	p.claimed += int64(n)
	p.mu.Unlock()
}

// observe takes a finishing transaction's latency, for the database signal. A short batch (the end
// of a backlog) says little about a full one.
func (p *pacer) observe(rows int, d time.Duration) {
	if rows*2 >= p.batch {
		p.finishes.add(time.Now(), d.Seconds()*float64(p.batch)/float64(rows))
	}
}

// setPace puts pc in force here, with its metrics.
func (p *pacer) setPace(pc pace) {
	p.mu.Lock()
	p.current = pc
	p.mu.Unlock()
	p.publish()
}

// publish writes the pace in force to the metrics.
func (p *pacer) publish() {
	p.mu.Lock()
	pc, holding := p.current, p.holding
	p.mu.Unlock()
	p.metrics.rateLimit.Set(pc.Rate)
	p.metrics.pacingSignal.Set(pc.Signal)
	p.metrics.pacingAim.Set(pc.Aim)
	for _, r := range allReasons {
		p.metrics.pacingReason.WithLabelValues(r).Set(b2f(r == pc.Reason))
	}
	p.metrics.pacingController.Set(b2f(holding))
}

var allReasons = []string{reasonMaxRate, reasonMinRate, reasonRising, reasonAtBudget, reasonOverBudget, reasonNoSignal,
	reasonReadingLevel}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// state is the pacing as a run report shows it.
func (p *pacer) state() store.RunPacing {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := store.RunPacing{Mode: p.cfg.Mode, Reason: p.current.Reason, Signal: p.current.Signal,
		Aim: p.current.Aim, Source: p.current.Source, Controller: p.current.Controller, WaitedSeconds: p.waited.Seconds()}
	if s.Mode == PacingOff && p.cfg.MaxRate > 0 {
		s.Mode = reasonMaxRate
	}
	if p.current.Rate > 0 {
		v := p.current.Rate
		s.RateLimit = &v
	}
	return s
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
