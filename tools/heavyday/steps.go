package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"pastebin/store"
)

// stepSpec is a step of -steps: a budget for the whole deployment, in batches of a size.
type stepSpec struct {
	budget int // pastes/s; 0: none
	batch  int // PASTEBIN_CLEANUP_BATCH_SIZE
}

// parseStep reads a step of -steps: a budget ("250", "0" for none), and a batch size of its own
// after an @ ("250@100"), else runBatch.
func parseStep(s string, runBatch int) (stepSpec, error) {
	budget, batch, own := strings.Cut(strings.TrimSpace(s), "@")
	spec := stepSpec{batch: runBatch}
	var err error
	if spec.budget, err = strconv.Atoi(budget); err != nil || spec.budget < 0 {
		return spec, fmt.Errorf("%q: want a budget such as 250, 0 (none) or 250@100 (in batches of 100)", s)
	}
	if own {
		if spec.batch, err = strconv.Atoi(batch); err != nil || spec.batch <= 0 {
			return spec, fmt.Errorf("%q: want a batch size after the @, such as 250@100", s)
		}
	}
	return spec, nil
}

// defaultStepWarmup is how long a step runs the load alone before its drain: 3 minutes at ten
// million, in proportion below that, and at least 20 s. At ten million, steps measured 20 s after
// their restore read the users' p99 at 7.6 and 9.1 ms at 1,000 and 2,000 pastes/s, where the paced
// window, ten minutes into the load, read 6.7 at 1,816; after 3 minutes both steps read 6.6
// (docs/performance.md, "The heavy day").
func defaultStepWarmup(pastes int) time.Duration {
	return perTenMillion(3*time.Minute, 20*time.Second, pastes)
}

// defaultStepSettle is how long a step's drain runs before its measured minute: a minute at ten
// million, in proportion below that, and at least 20 s. The users' latency does not answer a drain
// at once: at ten million, held five minutes at 2,000 pastes/s, the users' p99 over 20 s read 14 to
// 16 ms in the drain's first minute and 17 to 25 ms in the next three (at 3,000, 16 to 17 ms in
// its second minute and 16 to 30 in the two after; at 1,000, no rise), so a step measured from the
// drain's first second read the front low and its crossing high (docs/performance.md, "What run Q
// says").
func defaultStepSettle(pastes int) time.Duration {
	return perTenMillion(time.Minute, 20*time.Second, pastes)
}

// stepLevelSpan is how much of a step's warm-up, at its end, is recorded as the step's level with
// no drain: as long as the step, at most half the warm-up.
func (c config) stepLevelSpan() time.Duration { return min(c.stepLength, c.stepWarmup/2) }

// stepResult is one point of the plant the pacing steers: the drain held at a fixed budget for the
// whole deployment, from the same backlog, under the foreground load.
type stepResult struct {
	stepSpec
	d *drainResult
}

func budgetName(budget int) string {
	if budget == 0 {
		return "unlimited"
	}
	return strconv.Itoa(budget) + "/s"
}

// name is how the log and the report call the step; a batch size other than the run's is said.
func (s stepSpec) name(runBatch int) string {
	if s.batch != runBatch {
		return fmt.Sprintf("%s, batches of %d", budgetName(s.budget), s.batch)
	}
	return budgetName(s.budget)
}

// onFront returns the steps of the front: those in the run's batch size. Steps in batches of
// their own are measured beside it, not on it.
func onFront(steps []stepResult, runBatch int) []stepResult {
	return slices.DeleteFunc(slices.Clone(steps), func(s stepResult) bool { return s.batch != runBatch })
}

// measureSteps measures every step of -steps, each on a fresh copy of the data.
func (b *bench) measureSteps(ctx context.Context, rep *report) error {
	for _, spec := range b.cfg.steps {
		err := b.inPhase(ctx, func() error {
			s, err := b.step(ctx, spec)
			if err == nil {
				rep.steps = append(rep.steps, s)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("step at %s: %w", spec.name(b.cfg.batchSize), err)
		}
		if err := b.write(rep); err != nil {
			return err
		}
	}
	return nil
}

// measureReplay runs the paced window's rate over its second half again as a step, on a fresh
// copy of the data (phaseReplay).
func (b *bench) measureReplay(ctx context.Context, rep *report) error {
	if rep.heavy == nil {
		return fmt.Errorf("it replays the paced window: run it after %s", phaseHeavy)
	}
	spec := stepSpec{budget: max(1, int(math.Round(settledRate(rep.heavy)))), batch: b.cfg.batchSize}
	return b.inPhase(ctx, func() error {
		s, err := b.step(ctx, spec)
		if err == nil {
			rep.replay = &s
		}
		return err
	})
}

// frontOf is the steps of the front (onFront), each read against its level.
func (rep *report) frontOf(level levelOf) []frontPoint {
	return front(onFront(rep.steps, rep.cfg.batchSize), level, rep.cfg.budget)
}

// replayPoint is the replay (rep.replay, not nil) read as a step of the front is.
func (rep *report) replayPoint(level levelOf) frontPoint {
	return front([]stepResult{*rep.replay}, level, rep.cfg.budget)[0]
}

// windowBaseline is the paced window's baseline (ms) as the steps measure theirs, over windows of
// a step's length (windowedP99); NaN before the window has measured it.
func (rep *report) windowBaseline() float64 {
	if rep.heavy == nil {
		return math.NaN()
	}
	return windowedP99(rep.heavy.baseline, rep.cfg.stepLength)
}

// frontAt is the front's reading at rate: between two steps, on the logarithm of the rate as
// bestOnFront's crossing is; NaN outside the steps' rates.
func frontAt(points []frontPoint, rate float64) float64 {
	sorted := byRate(points)
	for i := 0; i+1 < len(sorted); i++ {
		p, q := sorted[i], sorted[i+1]
		if p.rate <= rate && rate <= q.rate && q.rate > p.rate {
			f := (math.Log(rate) - math.Log(p.rate)) / (math.Log(q.rate) - math.Log(p.rate))
			return p.ratio + f*(q.ratio-p.ratio)
		}
	}
	return math.NaN()
}

// step starts the replicas with the drain held at budget and the foreground load on them, and once
// -step-warmup has passed, starts the drain, lets it settle for -step-settle, and measures both for
// -step-length (or until the backlog is gone). The warm-up keeps the replicas' start (new
// connections, their first gauges) out of the step's p99; its end, as long as the step (at most
// half the warm-up), is recorded as the step's own level with no drain: the load alone on the same
// replicas, a minute before the drain.
func (b *bench) step(ctx context.Context, spec stepSpec) (stepResult, error) {
	d := &drainResult{name: "step at " + spec.name(b.cfg.batchSize), pacing: "off"}
	logs := filepath.Join(b.cfg.out, "logs", fmt.Sprintf("step-%d-batch-%d", spec.budget, spec.batch))
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return stepResult{}, err
	}
	st, err := store.Open(ctx, b.dbs.URL(phaseDB), b.logger)
	if err != nil {
		return stepResult{}, err
	}
	defer st.Close()
	s := replicaSettings{db: phaseDB, pacing: "off", logTo: logs, batch: spec.batch}
	if spec.budget > 0 {
		s.maxRate = strconv.Itoa(spec.budget)
	}
	rs, err := b.startReplicas(ctx, s)
	if err != nil {
		return stepResult{}, err
	}
	stop, done := make(chan struct{}), make(chan struct{})
	fg, err := b.startLoad(ctx, rs, stop, done)
	level := b.cfg.stepLevelSpan()
	if err == nil {
		err = watch(ctx, rs, b.cfg.stepWarmup-level)
	}
	if err == nil {
		fg.setRecording(true)
		err = watch(ctx, rs, level)
		d.baseline = fg.take()
	}
	if err == nil {
		settle := b.cfg.stepSettle
		err = b.follow(ctx, st, rs, d, time.Now().Add(settle+b.cfg.stepLength), settle, func() { fg.take() })
		d.during = fg.take()
	}
	close(stop)
	<-done
	d.peakRSS = stopReplicas(rs)
	b.logf("%s: %.0f pastes/s, users' p99 %s (%s the minute before); by %s, before: %s; during: %s", d.name, d.rate(),
		ms(statsOf(d.during).p99), ms(statsOf(d.baseline).p99), stepSlice,
		fmtMs(windowP99s(d.baseline, stepSlice)), fmtMs(windowP99s(d.during, stepSlice)))
	return stepResult{stepSpec: spec, d: d}, err
}

// stepSlice is the span of the p99s a step logs in its course: the users answer a drain some 20 s
// late (docs/design.md, "Pacing the drain"), so the first of a step's slices may read its level.
const stepSlice = 20 * time.Second

// fmtMs formats p99s (ms) as a list.
func fmtMs(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strings.Join(parts, " ")
}

// windowedP99 is the p99 of outs as the steps measure theirs: over windows of length, the median
// of the windows' p99s, so that a baseline of ten minutes compares with steps of one.
func windowedP99(outs []outcome, length time.Duration) float64 {
	p99s := windowP99s(outs, length)
	if len(p99s) == 0 {
		return math.NaN()
	}
	slices.Sort(p99s)
	return p99s[len(p99s)/2]
}

// windowP99s is the p99 (ms) of each window of length of outs, in time order from the first.
func windowP99s(outs []outcome, length time.Duration) []float64 {
	if len(outs) == 0 {
		return nil
	}
	sorted := slices.SortedFunc(slices.Values(outs), func(a, b outcome) int { return a.at.Compare(b.at) })
	var p99s []float64
	for from := sorted[0].at; !from.After(sorted[len(sorted)-1].at); from = from.Add(length) {
		if v := p99Between(sorted, from, from.Add(length)); !math.IsNaN(v) {
			p99s = append(p99s, v)
		}
	}
	return p99s
}

// frontPoint is a step as the report places it: its drain rate and the users' p99 over their
// level with no drain.
type frontPoint struct {
	stepSpec
	rate       float64
	p50, p99   float64 // ms
	level      float64 // ms: the users' p99 with no drain the step is read against
	ratio      float64 // p99 over level
	finishP50  float64 // seconds
	meetsBound bool
}

// against is the point read against level (ms): its ratio, and whether that is within budget.
func (p frontPoint) against(level, budget float64) frontPoint {
	p.level, p.ratio = level, p.p99/level
	p.meetsBound = p.ratio <= budget
	return p
}

// levelOf is a step's users' p99 with no drain (ms), against which the front reads it.
type levelOf func(stepResult) float64

// ownLevel is the load alone on the step's own replicas just before its drain (step): the level
// the pacing reads its own signal against, as the paced window is read against the load alone just
// before it. The users' latency with no drain moves within a run by as much as the budget's width
// (docs/performance.md, "What run J says"), so one level for every step reads the day into the
// front.
func ownLevel(s stepResult) float64 { return float64(statsOf(s.d.baseline).p99) / 1e6 }

// oneLevel reads every step against one level: the paced window's baseline, over windows of a
// step's length, as the runs up to J read the front.
func oneLevel(ms float64) levelOf { return func(stepResult) float64 { return ms } }

// front is the measured plant, in the order of the steps, each against its level.
func front(steps []stepResult, level levelOf, budget float64) []frontPoint {
	var out []frontPoint
	for _, s := range steps {
		st := statsOf(s.d.during)
		last := s.d.samples[len(s.d.samples)-1]
		p := frontPoint{stepSpec: s.stepSpec, rate: s.d.rate(), p50: float64(st.p50) / 1e6, p99: float64(st.p99) / 1e6,
			finishP50: last.finish.minus(s.d.samples[0].finish).quantile(0.5)}
		out = append(out, p.against(level(s), budget))
	}
	return out
}

// bestOnFront is the highest drain rate on the front whose users' p99 stays within budget: the
// highest step that meets it, and where the line to the next step crosses the budget (on the
// logarithm of the rate, between two measured points), or the step's own rate if none follows.
func bestOnFront(points []frontPoint, budget float64) (step, crossing float64) {
	sorted := byRate(points)
	for i, p := range sorted {
		if !p.meetsBound {
			continue
		}
		step, crossing = p.rate, p.rate
		if i+1 < len(sorted) && !sorted[i+1].meetsBound {
			q := sorted[i+1]
			f := (budget - p.ratio) / (q.ratio - p.ratio)
			crossing = math.Exp(math.Log(p.rate) + f*(math.Log(q.rate)-math.Log(p.rate)))
		}
	}
	return step, crossing
}

// monotone is the front fitted to the one shape the plant can have: more drain on the same
// database never makes the users faster, so a step that reads under a slower one reads the
// machine's noise. Each run of adjacent steps out of that order is pooled to its mean ratio (pool
// adjacent violators: the least-squares fit that never falls), so no one step's noise sets the
// crossing alone, as the step at 4,000 pastes/s did in run K (docs/heavyday-10m-k.md). Only the
// ratios are fitted; a point's p50 and p99 stay as measured.
func monotone(points []frontPoint, budget float64) []frontPoint {
	type pool struct {
		sum float64
		n   int
	}
	mean := func(p pool) float64 { return p.sum / float64(p.n) }
	out := byRate(points)
	var pools []pool
	for _, p := range out {
		pools = append(pools, pool{p.ratio, 1})
		for k := len(pools) - 1; k > 0 && mean(pools[k-1]) > mean(pools[k]); k-- {
			pools[k-1] = pool{pools[k-1].sum + pools[k].sum, pools[k-1].n + pools[k].n}
			pools = pools[:k]
		}
	}
	i := 0
	for _, p := range pools {
		for range p.n {
			out[i].ratio = mean(p)
			out[i].meetsBound = out[i].ratio <= budget
			i++
		}
	}
	return out
}

// byRate is points sorted by their drain rate, the order both readings of the front interpolate in.
func byRate(points []frontPoint) []frontPoint {
	return slices.SortedFunc(slices.Values(points), func(a, b frontPoint) int { return cmpFloat(a.rate, b.rate) })
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
