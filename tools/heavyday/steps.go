package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"pastebin/store"
)

// stepResult is one point of the plant the pacing steers: the drain held at a fixed budget for the
// whole deployment, from the same backlog, under the foreground load.
type stepResult struct {
	budget int // pastes/s; 0: none
	d      *drainResult
}

func budgetName(budget int) string {
	if budget == 0 {
		return "unlimited"
	}
	return strconv.Itoa(budget) + "/s"
}

// measureSteps measures every step of -steps, each on a fresh copy of the data.
func (b *bench) measureSteps(ctx context.Context, rep *report) error {
	for _, budget := range b.cfg.steps {
		err := b.inPhase(ctx, func() error {
			s, err := b.step(ctx, budget)
			if err == nil {
				rep.steps = append(rep.steps, s)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("step at %s: %w", budgetName(budget), err)
		}
		if err := b.write(rep); err != nil {
			return err
		}
	}
	return nil
}

// step starts the replicas with the drain held at budget and the foreground load on them, and once
// -step-warmup has passed, starts the drain and measures both for -step-length (or until the
// backlog is gone). The warm-up keeps the replicas' start (new connections, their first gauges)
// out of the step's p99, which the baseline's, taken on replicas long started, does not have.
func (b *bench) step(ctx context.Context, budget int) (stepResult, error) {
	d := &drainResult{name: "step at " + budgetName(budget), pacing: "off"}
	logs := filepath.Join(b.cfg.out, "logs", "step-"+strconv.Itoa(budget))
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return stepResult{}, err
	}
	st, err := store.Open(ctx, b.dbs.URL(phaseDB), b.logger)
	if err != nil {
		return stepResult{}, err
	}
	defer st.Close()
	s := replicaSettings{db: phaseDB, pacing: "off", logTo: logs}
	if budget > 0 {
		s.maxRate = strconv.Itoa(budget)
	}
	rs, err := b.startReplicas(ctx, s)
	if err != nil {
		return stepResult{}, err
	}
	stop, done := make(chan struct{}), make(chan struct{})
	fg, err := b.startLoad(ctx, rs, stop, done)
	if err == nil {
		err = sleep(ctx, b.cfg.stepWarmup)
	}
	if err == nil {
		fg.setRecording(true)
		err = b.follow(ctx, st, rs, d, time.Now().Add(b.cfg.stepLength))
		d.during = fg.take()
	}
	close(stop)
	<-done
	d.peakRSS = stopReplicas(rs)
	b.logf("%s: %.0f pastes/s, users' p99 %s", d.name, d.rate(), ms(statsOf(d.during).p99))
	return stepResult{budget: budget, d: d}, err
}

// windowedP99 is the p99 of outs as the steps measure theirs: over windows of length, the median
// of the windows' p99s, so that a baseline of ten minutes compares with steps of one.
func windowedP99(outs []outcome, length time.Duration) float64 {
	if len(outs) == 0 {
		return math.NaN()
	}
	sorted := slices.SortedFunc(slices.Values(outs), func(a, b outcome) int { return a.at.Compare(b.at) })
	var p99s []float64
	for from := sorted[0].at; !from.After(sorted[len(sorted)-1].at); from = from.Add(length) {
		if v := p99Between(sorted, from, from.Add(length)); !math.IsNaN(v) {
			p99s = append(p99s, v)
		}
	}
	slices.Sort(p99s)
	return p99s[len(p99s)/2]
}

// frontPoint is a step as the report places it: its drain rate and the users' p99 over their
// level with no drain.
type frontPoint struct {
	budget     int
	rate       float64
	p50, p99   float64 // ms
	ratio      float64 // p99 over the baseline's, measured alike
	finishP50  float64 // seconds
	meetsBound bool
}

// front is the measured plant, in the order of the steps, against baseline (ms, the p99 over
// windows of a step's length).
func front(steps []stepResult, baseline, budget float64) []frontPoint {
	var out []frontPoint
	for _, s := range steps {
		st := statsOf(s.d.during)
		last := s.d.samples[len(s.d.samples)-1]
		p := frontPoint{budget: s.budget, rate: s.d.rate(), p50: float64(st.p50) / 1e6, p99: float64(st.p99) / 1e6,
			finishP50: last.finish.minus(s.d.samples[0].finish).quantile(0.5)}
		p.ratio = p.p99 / baseline
		p.meetsBound = p.ratio <= budget
		out = append(out, p)
	}
	return out
}

// bestOnFront is the highest drain rate on the front whose users' p99 stays within budget: the
// highest step that meets it, and where the line to the next step crosses the budget (on the
// logarithm of the rate, between two measured points), or the step's own rate if none follows.
func bestOnFront(points []frontPoint, budget float64) (step, crossing float64) {
	sorted := slices.SortedFunc(slices.Values(points), func(a, b frontPoint) int {
		return cmpFloat(a.rate, b.rate)
	})
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

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
