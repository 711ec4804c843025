package expiry

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"pastebin/cache"
)

// followEvery is how often a draining process counts itself in, adds its claims to the shared
// count and reads the pace.
const followEvery = time.Second

// steering is the controller as the process holding its lease runs it.
type steering struct {
	ctl     *controller
	signals *signals
	began   time.Time
	release func()
	next    time.Time   // the controller's next step
	claims  []claimMark // the deployment's claims over the last window, for its throughput
	// readings are the users' signal over the last spreadSpan, for the aim's spread.
	readings   []reading
	spreadSpan time.Duration
	spreadNext time.Time // when the spread is read next
	// levelAt is when the users' level was last read; reading, when the drain was held at its
	// floor to read it again (zero: it is not).
	levelAt, reading time.Time
}

type reading struct {
	at    time.Time
	ratio float64
}

type claimMark struct {
	at    time.Time
	total int64
}

// steer follows the deployment's pacing while ctx lasts (a run): every followEvery it counts this
// process among the drainers, adds what it claimed to the shared count and reads the pace; in
// automatic mode it also tries for the controller's lease, and while it holds it, steps the
// controller every tick and publishes the pace for every replica. The lease goes when ctx ends, or
// when this process dies (its time to live): another draining process takes it over then, and
// carries on from the pace published, baseline included.
func (p *pacer) steer(ctx context.Context) {
	defer p.stopSteering(context.WithoutCancel(ctx))
	t := time.NewTicker(min(followEvery, p.cfg.scaled(controllerTick)))
	defer t.Stop()
	for {
		p.tickAt(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tickAt is one beat of steer, at now.
func (p *pacer) tickAt(ctx context.Context, now time.Time) {
	p.count(ctx)
	if p.cfg.Mode == PacingAuto {
		if p.steering == nil {
			p.steering = p.takeOver(ctx, now)
		}
		if st := p.steering; st != nil && !now.Before(st.next) {
			p.step(ctx, st, now)
		}
	}
	if p.steering == nil {
		p.follow(ctx)
	}
}

// stopSteering releases the controller's lease, if this process holds it, and leaves the roster.
func (p *pacer) stopSteering(ctx context.Context) {
	if st := p.steering; st != nil && st.release != nil {
		st.release()
	}
	p.steering = nil
	p.setHolding(false)
	if p.shared.Drainers != nil {
		_ = p.shared.Drainers.Leave(ctx, p.member)
	}
}

// count counts this process among the drainers and adds its claims to the shared count.
func (p *pacer) count(ctx context.Context) {
	p.mu.Lock()
	claimed := p.claimed
	p.claimed = 0
	p.mu.Unlock()
	if p.shared.Claimed == nil {
		p.mu.Lock()
		p.total += claimed
		p.mu.Unlock()
	} else if total, err := p.shared.Claimed.Add(ctx, claimed); err == nil {
		p.mu.Lock()
		p.total = total
		p.mu.Unlock()
	} else {
		p.mu.Lock()
		p.claimed += claimed // added next time
		p.mu.Unlock()
	}
	if p.shared.Drainers == nil {
		return
	}
	if hc, err := p.shared.Drainers.Join(ctx, p.member, p.weight()); err == nil {
		p.mu.Lock()
		p.drainers = hc
		p.mu.Unlock()
	}
}

// follow reads the pace the controller published. Unread (Redis away, or no controller yet), the
// last one known stays in force.
func (p *pacer) follow(ctx context.Context) {
	if p.shared.Pace == nil || p.cfg.Mode != PacingAuto {
		return
	}
	var pc pace
	if ok, err := p.shared.Pace.Load(ctx, &pc); err == nil && ok {
		p.setPace(pc)
	}
}

// takeOver takes the controller's lease if nobody holds it and returns the steering, or nil. A
// pace published lately is a drain going on: the new controller starts from its rate and keeps
// its baseline, and carries on with a read of the users' level under way (readLevel). Otherwise
// the drain begins now, at the floor, and the users' p99 of the minutes before (from afterDrain
// past the last pace, where that is later) is its baseline.
func (p *pacer) takeOver(ctx context.Context, now time.Time) *steering {
	var release func()
	if p.shared.Controller != nil {
		r, err := p.shared.Controller.Acquire(ctx)
		if errors.Is(err, cache.ErrLockHeld) || (err != nil && p.shared.Pace != nil) {
			return nil // another process steers; or Redis is away, and the last pace holds
		}
		release = r
	}
	window := p.cfg.scaled(controllerWindow)
	st := &steering{signals: &signals{users: p.shared.Users, window: window, horizon: p.cfg.scaled(finishHorizon),
		finishes: p.finishes}, release: release, next: now, spreadSpan: p.cfg.scaled(spreadSpan)}
	st.ctl = newController(p.cfg, p.floor(), p.ceiling(), now)
	var last pace
	if p.shared.Pace != nil {
		if ok, err := p.shared.Pace.Load(ctx, &last); err != nil || !ok {
			last = pace{}
		}
	}
	if !last.Began.IsZero() && now.Sub(last.At) < paceFresh {
		st.began, st.signals.baseline, st.levelAt = last.Began, last.Baseline, last.LevelAt
		if st.levelAt.IsZero() { // published by a version that did not read the level again
			st.levelAt = last.Began
		}
		rate := last.Rate
		if last.Reason == reasonReadingLevel && last.Held > 0 { // carry on with the read
			st.reading, rate = last.Reading, last.Held
		}
		st.ctl.rate = min(max(rate, st.ctl.floor), st.ctl.ceiling)
		st.ctl.spread = max(1, last.Spread)
		st.ctl.aim = st.ctl.usersAim()
	} else {
		st.began, st.levelAt = now, now
		st.signals.setBaseline(ctx, last.At, now)
	}
	p.setHolding(true)
	p.logger.InfoContext(ctx, "this process runs the cleanup pacing's controller", "rate", st.ctl.rate,
		"users_p99_before_seconds", st.signals.baseline, "drain_began", st.began)
	return st
}

// step steps the controller and publishes its pace; or, while the users' level is read again,
// holds the drain at its floor.
func (p *pacer) step(ctx context.Context, st *steering, now time.Time) {
	st.next = now.Add(p.cfg.scaled(controllerTick))
	if p.readLevel(ctx, st, now) {
		return
	}
	signal, source, ok := st.signals.read(ctx, now)
	if ok && source == sourceUsers && st.ctl.reachedAim() {
		st.ctl.spread = st.spread(ctx, now, signal)
	}
	before, cutAt := st.ctl.reason, st.ctl.holdUntil
	st.ctl.step(now, signal, source, ok, st.throughput(now, p.totalNow()))
	if st.ctl.holdUntil != cutAt { // counted by the controller alone, not by every replica that follows
		p.metrics.slowdowns.WithLabelValues(reasonOverBudget).Inc()
	}
	pc := st.pace(p, now)
	p.publishPace(ctx, pc)
	if pc.Reason != before && (pc.Reason == reasonOverBudget || before == reasonOverBudget) {
		p.logger.InfoContext(ctx, "cleanup pacing", "rate", pc.Rate, "reason", pc.Reason, "signal", pc.Signal,
			"source", pc.Source, "budget", pc.Budget)
	}
}

// pace is the controller's decision at now, as the replicas share it.
func (st *steering) pace(p *pacer, now time.Time) pace {
	c := st.ctl
	pc := pace{Rate: c.rate, Reason: c.reason, Signal: c.signal, Aim: c.aim, Spread: c.spread, Source: c.source,
		Budget: p.cfg.LatencyBudget, Baseline: st.signals.baseline, Controller: p.member, Began: st.began,
		LevelAt: st.levelAt, At: now}
	if math.IsInf(pc.Rate, 1) {
		pc.Rate = 0
	}
	return pc
}

// publishPace puts pc in force here and shares it with the other replicas.
func (p *pacer) publishPace(ctx context.Context, pc pace) {
	p.setPace(pc)
	if p.shared.Pace != nil {
		if err := p.shared.Pace.Store(ctx, pc); err != nil {
			p.redisFailed(err)
		}
	}
}

// readLevel reads the users' level again once the last read is levelEvery old, as BBR reads a
// path's shortest round trip again by draining its queue: it holds the drain at its floor for
// levelSettle and levelRead and reads their p99 over the last levelRead (signals.relevel). Once
// the level is read the drain goes back to the rate the controller had, and the controller steps
// again a signal window later, when its window no longer holds the floor; its throughput is
// measured from then, so the floor's low throughput does not clamp the rate, and the spread from
// then, its readings read against the old level. It says whether it published the pace of this
// step. A controller steering by the database's signal (too few requests) reads no level.
func (p *pacer) readLevel(ctx context.Context, st *steering, now time.Time) bool {
	if st.signals.baseline <= 0 || (st.reading.IsZero() && st.ctl.source != sourceUsers) {
		return false
	}
	if st.reading.IsZero() {
		if now.Sub(st.levelAt) < p.cfg.scaled(levelEvery) {
			return false
		}
		st.reading = now
		p.logger.InfoContext(ctx, "cleanup pacing holds the drain at its floor to read the users' level again",
			"rate", st.ctl.rate, "level_seconds", st.signals.baseline)
	}
	read := p.cfg.scaled(levelRead)
	if now.Sub(st.reading) < p.cfg.scaled(levelSettle)+read {
		pc := st.pace(p, now)
		pc.Rate, pc.Reason, pc.Reading, pc.Held = st.ctl.floor, reasonReadingLevel, st.reading, st.ctl.rate
		p.publishPace(ctx, pc)
		return true
	}
	st.signals.relevel(ctx, now.Add(-read), now)
	st.levelAt, st.reading, st.claims = now, time.Time{}, nil
	st.readings, st.spreadNext = nil, time.Time{} // read against the old level
	st.ctl.resume(now)
	st.next = now.Add(st.signals.window)
	p.publishPace(ctx, st.pace(p, now))
	p.logger.InfoContext(ctx, "cleanup pacing read the users' level again", "level_seconds", st.signals.baseline,
		"rate", st.ctl.rate)
	return true
}

// spread records the users' signal at now, once the first climb is over (a climb's low readings
// say nothing of the noise around the aim), and returns how far their p99 over the readings' span
// (spreadSpan, once the drain has run that long) reads above the median of the readings. Until the
// readings span two signal windows the spread stays as it was: 1, or the one a controller that
// took over was handed. It is read again every third of a window: a read spans minutes of every
// replica's latency windows.
func (st *steering) spread(ctx context.Context, now time.Time, signal float64) float64 {
	st.readings = append(st.readings, reading{now, signal})
	cut := 0
	for cut < len(st.readings)-1 && now.Sub(st.readings[cut].at) > st.spreadSpan-st.signals.window {
		cut++
	}
	st.readings = st.readings[cut:]
	first := st.readings[0].at
	if now.Sub(first) < 2*st.signals.window || now.Before(st.spreadNext) {
		return st.ctl.spread
	}
	long, ok := st.signals.usersOver(ctx, first.Add(-st.signals.window), now)
	if !ok {
		return st.ctl.spread
	}
	st.spreadNext = now.Add(st.signals.window / 3)
	ratios := make([]float64, len(st.readings))
	for i, r := range st.readings {
		ratios[i] = r.ratio
	}
	slices.Sort(ratios)
	return max(1, long/ratios[len(ratios)/2])
}

// throughput is the deployment's claims per second over the last window, from the shared count;
// 0 (unknown) until the count spans half a window: over a few seconds, claimed a batch at a time,
// it reads the drain short of its rate, and the headroom clamp would cut a rate it can reach.
func (st *steering) throughput(now time.Time, total int64) float64 {
	st.claims = append(st.claims, claimMark{now, total})
	cut := 0
	for cut < len(st.claims)-1 && now.Sub(st.claims[cut+1].at) >= st.signals.window {
		cut++
	}
	st.claims = st.claims[cut:]
	first := st.claims[0]
	if span := now.Sub(first.at); span >= st.signals.window/2 {
		return float64(total-first.total) / span.Seconds()
	}
	return 0
}

func (p *pacer) totalNow() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}

func (p *pacer) setHolding(h bool) {
	p.mu.Lock()
	p.holding = h
	p.mu.Unlock()
	p.publish()
}

// start begins a run's pacing: the pace a run starts from, and the steering loop, until the
// returned stop is called.
func (p *pacer) start(ctx context.Context) (stop func()) {
	p.mu.Lock()
	p.waited, p.current = 0, p.startingPace()
	p.local = nil // made at the first take, empty
	p.mu.Unlock()
	p.publish()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.steer(ctx) }()
	return func() { cancel(); <-done }
}
