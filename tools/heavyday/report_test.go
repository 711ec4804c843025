package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)

// load is an open-loop foreground of rate requests a second for seconds, each taking latency(i)
// for the i-th second.
func load(seconds, rate int, latency func(second int) time.Duration) []outcome {
	var outs []outcome
	for s := range seconds {
		for r := range rate {
			outs = append(outs, outcome{at: t0.Add(time.Duration(s)*time.Second + time.Duration(r)*time.Second/time.Duration(rate)),
				latency: latency(s), kind: "read", ok: true})
		}
	}
	return outs
}

// drainAt is a drain that cleaned perSecond[i] pastes in its i-th second, scraped every second,
// under the foreground during.
func drainAt(perSecond []float64, during []outcome) *drainResult {
	d := &drainResult{during: during, samples: []sample{{at: t0}}}
	total := 0.0
	for i, n := range perSecond {
		total += n
		d.samples = append(d.samples, sample{at: t0.Add(time.Duration(i+1) * time.Second), tombstoned: total})
	}
	d.pastes, d.seconds = int64(total), float64(len(perSecond))
	return d
}

func steady(rate float64, seconds int) []float64 {
	out := make([]float64, seconds)
	for i := range out {
		out[i] = rate
	}
	return out
}

func constant(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }

// TestBestOnFront: the highest rate within the budget is the highest step that meets it, and the
// front crosses the budget between it and the next step, on the logarithm of the rate; a step that
// meets the budget below one that does not (the machine's noise) does not hide a higher one that
// meets it; a front that never meets it has no best rate.
func TestBestOnFront(t *testing.T) {
	knee := []frontPoint{
		{rate: 250, ratio: 1.0, meetsBound: true},
		{rate: 1000, ratio: 1.1, meetsBound: true},
		{rate: 4000, ratio: 1.3, meetsBound: true},
		{rate: 16000, ratio: 1.7, meetsBound: false},
		{rate: 20000, ratio: 3.0, meetsBound: false},
	}
	step, crossing := bestOnFront(knee, 1.5)
	// Halfway from 1.3 to 1.7 in the ratio is halfway from 4000 to 16000 in the log of the rate: 8000.
	if step != 4000 || math.Abs(crossing-8000) > 1 {
		t.Errorf("knee: step %.0f, crossing %.0f; want 4000 and 8000", step, crossing)
	}
	noisy := []frontPoint{
		{rate: 500, ratio: 1.6, meetsBound: false},
		{rate: 2000, ratio: 1.2, meetsBound: true},
		{rate: 9000, ratio: 1.4, meetsBound: true},
	}
	if step, crossing := bestOnFront(noisy, 1.5); step != 9000 || crossing != 9000 {
		t.Errorf("noisy front: step %.0f, crossing %.0f; want the last step met, 9000, with none above it", step, crossing)
	}
	if step, crossing := bestOnFront([]frontPoint{{rate: 250, ratio: 2, meetsBound: false}}, 1.5); step != 0 || crossing != 0 {
		t.Errorf("a front over budget everywhere: %.0f, %.0f; want none", step, crossing)
	}
}

// TestMonotoneFront: steps out of the plant's order are pooled to their mean, so that run K's
// front (own levels: 1.82× at 3,000 pastes/s, then 1.49× at 4,000) crosses the budget between
// 2,000 and the pooled pair, not at the step that read low; a front already in order is unchanged.
func TestMonotoneFront(t *testing.T) {
	k := []frontPoint{{rate: 250, ratio: 1.05}, {rate: 10863, ratio: 7.28}, {rate: 1000, ratio: 1.04},
		{rate: 2000, ratio: 1.38}, {rate: 3000, ratio: 1.82}, {rate: 4000, ratio: 1.49}}
	fit := monotone(k, 1.5)
	want := []float64{1.045, 1.045, 1.38, 1.655, 1.655, 7.28}
	for i, p := range fit {
		if math.Abs(p.ratio-want[i]) > 1e-9 || p.meetsBound != (want[i] <= 1.5) {
			t.Errorf("step %d at %.0f pastes/s: %.3f (within: %v), want %.3f", i, p.rate, p.ratio, p.meetsBound, want[i])
		}
	}
	// 2,000 × 1.5^((1.5 − 1.38) / (1.655 − 1.38)): 2,387.
	if step, crossing := bestOnFront(fit, 1.5); step != 2000 || math.Abs(crossing-2387) > 1 {
		t.Errorf("run K's front fitted: step %.0f, crossing %.0f; want 2000 and 2387", step, crossing)
	}
	if k[4].ratio != 1.82 {
		t.Errorf("monotone changed its caller's points")
	}
	inOrder := []frontPoint{{rate: 250, ratio: 1.0}, {rate: 1000, ratio: 1.1}, {rate: 4000, ratio: 1.7}}
	for i, p := range monotone(inOrder, 1.5) {
		if p.ratio != inOrder[i].ratio {
			t.Errorf("a front in order: step %d fitted to %v, want %v", i, p.ratio, inOrder[i].ratio)
		}
	}
}

// TestWindowedP99: a baseline's p99 is the median of its windows' p99s, so that one slow window of a
// ten-minute baseline weighs as it would in one of a minute-long step, and no more.
func TestWindowedP99(t *testing.T) {
	outs := load(100, 50, func(s int) time.Duration {
		if s >= 40 && s < 50 {
			return 500 * time.Millisecond // one slow window of ten
		}
		return 4 * time.Millisecond
	})
	if got := windowedP99(outs, 10*time.Second); got != 4 {
		t.Errorf("windowed p99: %.1f ms, want 4 (the median window's)", got)
	}
	if got := statsOf(outs).p99; got != 500*time.Millisecond {
		t.Errorf("p99 over all: %s, want 500ms: a tenth of the requests were slow", got)
	}
	if got := windowedP99(nil, time.Second); !math.IsNaN(got) {
		t.Errorf("windowed p99 of nothing: %v, want NaN", got)
	}
}

// TestFrontPlacesSteps: each step's users' p99 is held against its level with no drain, one for
// every step or each step's own, and meets the budget only up to it.
func TestFrontPlacesSteps(t *testing.T) {
	steps := []stepResult{
		{stepSpec: stepSpec{budget: 1000}, d: drainAt(steady(1000, 60), load(60, 20, constant(5*time.Millisecond)))},
		{stepSpec: stepSpec{budget: 0}, d: drainAt(steady(9000, 60), load(60, 20, constant(12*time.Millisecond)))},
	}
	points := front(steps, oneLevel(4), 1.5)
	if len(points) != 2 {
		t.Fatalf("%d points, want 2", len(points))
	}
	if p := points[0]; p.rate != 1000 || p.p99 != 5 || p.ratio != 1.25 || !p.meetsBound {
		t.Errorf("the step at 1000/s: %+v; want 1000 pastes/s, p99 5 ms, 1.25× the baseline, within the budget", p)
	}
	if p := points[1]; p.rate != 9000 || p.ratio != 3 || p.meetsBound {
		t.Errorf("the unlimited step: %+v; want 9000 pastes/s, 3× the baseline, over the budget", p)
	}
	// The load alone read 2 ms before the first step and 10 ms before the second: the day moved.
	steps[0].d.baseline = load(30, 20, constant(2*time.Millisecond))
	steps[1].d.baseline = load(30, 20, constant(10*time.Millisecond))
	own := front(steps, ownLevel, 1.5)
	if p := own[0]; p.level != 2 || p.ratio != 2.5 || p.meetsBound {
		t.Errorf("the step at 1000/s against its own level: %+v; want 2 ms, 2.5×, over the budget", p)
	}
	if p := own[1]; p.level != 10 || p.ratio != 1.2 || !p.meetsBound {
		t.Errorf("the unlimited step against its own level: %+v; want 10 ms, 1.2×, within the budget", p)
	}
}

// TestSettledRate: the automatic rate is the paced window's second half, leaving out the climb
// from the floor.
func TestSettledRate(t *testing.T) {
	climb := append(steady(200, 30), steady(3000, 90)...) // 30 s at the floor, then 90 s settled
	d := drainAt(climb, nil)
	if got := settledRate(d); got != 3000 {
		t.Errorf("settled rate %.0f, want 3000", got)
	}
	if got := d.rate(); got >= 3000 {
		t.Errorf("the whole window's rate %.0f: the climb should pull it under the settled rate", got)
	}
}

// TestTenths: a drain split at every tenth of its pastes, and a drain too short to split.
func TestTenths(t *testing.T) {
	ts := tenths(drainAt(append(steady(1000, 50), steady(500, 100)...), nil)) // 100,000 pastes
	if len(ts) != 10 {
		t.Fatalf("%d tenths, want 10", len(ts))
	}
	first, last := ts[0].pastes/ts[0].seconds, ts[9].pastes/ts[9].seconds
	if first != 1000 || last != 500 {
		t.Errorf("first tenth %.0f pastes/s, last %.0f; want 1000 and 500", first, last)
	}
	if ts := tenths(drainAt(steady(10, 3), nil)); len(ts) >= 10 {
		t.Errorf("a drain of three scrapes split in %d tenths", len(ts))
	}
}

// TestPacedTargets: the report's lines for the paced window say what was measured against what the
// issue asks, and whether it was met.
func TestPacedTargets(t *testing.T) {
	rep := &report{cfg: config{budget: 1.5, stepLength: 10 * time.Second, batchSize: 1000}}
	step := func(spec stepSpec, rate float64, level, p99 time.Duration) stepResult {
		s := stepResult{stepSpec: spec, d: drainAt(steady(rate, 10), load(10, 20, constant(p99)))}
		s.d.baseline = load(10, 20, constant(level))
		return s
	}
	rep.steps = []stepResult{
		step(stepSpec{1000, 1000}, 1000, 4*time.Millisecond, 4*time.Millisecond),
		step(stepSpec{4000, 1000}, 4000, 4*time.Millisecond, 5*time.Millisecond),
		// In batches of its own: measured beside the front, not on it, or the crossing would be past 8000/s.
		step(stepSpec{8000, 100}, 8000, 4*time.Millisecond, 4*time.Millisecond),
		// The load alone read 10 ms before it: against its own level it reads 2×, against the window's 5×.
		step(stepSpec{0, 1000}, 16000, 10*time.Millisecond, 20*time.Millisecond),
	}
	heavy := drainAt(append(steady(200, 30), steady(3800, 90)...), load(120, 20, constant(5*time.Millisecond)))
	heavy.baseline = load(120, 20, constant(4*time.Millisecond))
	rep.heavy = heavy
	pacedTargets := func() []string {
		var lines []string
		writePacedTargets(rep, func(target, measured string, v verdict) {
			lines = append(lines, target+" | "+measured+" | "+string(v))
		})
		return lines
	}
	text := strings.Join(pacedTargets(), "\n")
	for _, want := range []string{
		"users' p99 over the window ≤ 1.5× the baseline's, over as long | 5.0 ms against 4.0 ms: 1.25× | yes",
		"zero foreground errors | 0 of 2400 | yes",
		// Each step against its own level, the front crosses 1.5× a third of the way from 4000/s (1.25×)
		// to 16000/s (2×), on the log of the rate; against the window's baseline, a fifteenth of the
		// way to 16000/s at 5×.
		"3800 against 6350 pastes/s: -40% (every step against the window's baseline: 4387, -13%;",
		// The load alone read 4 ms before three steps and 10 ms before the last: the crossing is the day's.
		"the load alone before the steps read 4.0 ms to 10.0 ms: it moved by 2.50×, more than the budget allows the drain | not judged\n",
		"10 million pastes cleaned before morning (6 hours) at that rate | 0.7 hours | yes",
	} {
		if !strings.Contains(text+"\n", want) {
			t.Errorf("the paced targets lack %q:\n%s", want, text)
		}
	}
	// With the last step's level at 5 ms the levels moved by 1.25×, within the budget: the rate is judged.
	rep.steps[3].d.baseline = load(10, 20, constant(5*time.Millisecond))
	if rate := pacedTargets()[2]; !strings.HasSuffix(rate, "| **no**") || strings.Contains(rate, "moved by") {
		t.Errorf("a front whose levels moved within the budget, the rate target: %s", rate)
	}
	// Its levels on the front, 4, 4 and 5 ms, spread by 13%: 0.87 of them reads the step at 4000/s at
	// 1.44×, 1.13 of them at 1.10×, and the front crosses a fiftieth and a sixth of the way to 16000/s.
	var levels bytes.Buffer
	writeFront(&levels, rep)
	if want := "The load alone before the steps read 4.0 ms to 5.0 ms, a (sample) standard deviation of 13% of their mean: " +
		"with every level that much lower, the front would cross the budget at 4102 pastes/s, and that much higher, at 5018 pastes/s."; !strings.Contains(levels.String(), want) {
		t.Errorf("the front's section lacks %q:\n%s", want, levels.String())
	}
	rep.steps[3].d.baseline = load(10, 20, constant(10*time.Millisecond))
	rep.replay = &stepResult{stepSpec: stepSpec{3800, 1000}, d: drainAt(steady(3800, 10), load(10, 20, constant(6*time.Millisecond)))}
	rep.replay.d.baseline = load(10, 20, constant(5*time.Millisecond))
	var buf bytes.Buffer
	writeFront(&buf, rep)
	writeReplay(&buf, rep)
	for _, want := range []string{"The controller's point: 3800 pastes/s", "-40% of the crossing (-13% of the one against the window's baseline, -40% of the fitted one)",
		"pooled to their mean ratio), it crosses at 6350.",
		// 4 ms before the first three steps, 10 ms before the unlimited one.
		"The load alone before the steps read 4.0 ms to 10.0 ms: it moved by 2.50×, more than the budget allows",
		"| 8000/s, batches of 100 | 8000 |",
		"| unlimited | 16000 | 20.0 ms | 20.0 ms | 10.0 ms | 2.00× | no | 5.00× | no |",
		// 3800/s lies 0.96 of the way from 1000/s (1×) to 4000/s (1.25×) on the log of the rate.
		"read 6.0 ms. That is 1.20× the load alone just before it (5.0 ms), where the window read 1.25× against the load alone " +
			"before it and the front reads 1.24× at that rate; and 1.50× the window's baseline, where the front, every step read against that baseline, reads 1.24×"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the front's section lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestFrontBeforeTheBaseline: a report written after the steps and before the paced window, which
// measures the window's baseline, reads the steps against their own levels and leaves the window's
// columns empty, rather than print NaN and a crossing at 0 pastes/s.
func TestFrontBeforeTheBaseline(t *testing.T) {
	rep := &report{cfg: config{budget: 1.5, stepLength: 10 * time.Second, batchSize: 1000}}
	rep.steps = []stepResult{
		{stepSpec: stepSpec{1000, 1000}, d: drainAt(steady(1000, 10), load(10, 20, constant(4*time.Millisecond)))},
	}
	rep.steps[0].d.baseline = load(10, 20, constant(4*time.Millisecond))
	var buf bytes.Buffer
	writeFront(&buf, rep)
	text := buf.String()
	if !strings.Contains(text, "| 1000/s | 1000 | 4.0 ms | 4.0 ms | 4.0 ms | 1.00× | yes | – | – |") || strings.Contains(text, "NaN") ||
		!strings.Contains(text, "1000 where the front crosses") {
		t.Errorf("the front before the baseline:\n%s", text)
	}
}

// TestRunsOfAWindow: a paced window ends before its runs do, and its report says so rather than
// print an empty table.
func TestRunsOfAWindow(t *testing.T) {
	var buf bytes.Buffer
	writeRuns(&buf, drainAt(steady(1000, 10), nil))
	if text := buf.String(); !strings.Contains(text, "none had ended") || strings.Contains(text, "| run |") {
		t.Errorf("the runs of a window:\n%s", text)
	}
}

func TestFrontAt(t *testing.T) {
	points := []frontPoint{{rate: 4000, ratio: 2}, {rate: 1000, ratio: 1}}
	for rate, want := range map[float64]float64{1000: 1, 2000: 1.5, 4000: 2} {
		if got := frontAt(points, rate); math.Abs(got-want) > 1e-9 {
			t.Errorf("frontAt(%v) = %v, want %v", rate, got, want)
		}
	}
	for _, rate := range []float64{500, 8000} {
		if got := frontAt(points, rate); !math.IsNaN(got) {
			t.Errorf("frontAt(%v) = %v outside the steps, want NaN", rate, got)
		}
	}
}

func TestParseStep(t *testing.T) {
	for in, want := range map[string]stepSpec{"250": {250, 1000}, " 0 ": {0, 1000}, "250@100": {250, 100}} {
		if got, err := parseStep(in, 1000); err != nil || got != want {
			t.Errorf("parseStep(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "x", "250@", "250@0", "250@x", "@100"} {
		if got, err := parseStep(in, 1000); err == nil {
			t.Errorf("parseStep(%q) = %+v, want an error", in, got)
		}
	}
}

func TestDefaultStepWarmup(t *testing.T) {
	for pastes, want := range map[int]time.Duration{200_000: 20 * time.Second, 1_000_000: 20 * time.Second,
		5_000_000: 90 * time.Second, 10_000_000: 3 * time.Minute} {
		if got := defaultStepWarmup(pastes); got != want {
			t.Errorf("defaultStepWarmup(%d) = %s, want %s", pastes, got, want)
		}
	}
}

// TestLevelsAtTheFrontsEnds: the levels' spread can move the crossing past either end of the
// front, and a step without a level (an empty baseline) leaves nothing to place the controller by.
func TestLevelsAtTheFrontsEnds(t *testing.T) {
	point := func(rate, p99, level float64) frontPoint {
		return frontPoint{rate: rate, p99: p99}.against(level, 1.5)
	}
	for _, c := range []struct {
		points []frontPoint
		want   string
	}{
		// Levels 4, 4 and 5.5 ms (a spread of 19%): 0.81 of them puts the slowest step at 1.6×.
		{[]frontPoint{point(1000, 5.2, 4), point(4000, 5.6, 4), point(16000, 22, 5.5)},
			"with every level that much lower, the front would cross the budget under its slowest step (1000 pastes/s), and that much higher, at "},
		// Every step far within the budget: 1.19 of the levels leaves the fastest within it too.
		{[]frontPoint{point(1000, 4, 4), point(4000, 4.4, 4), point(16000, 7, 5)},
			"and that much higher, past its fastest step (16000 pastes/s)."},
		{[]frontPoint{point(1000, 4, 4), point(4000, 5, 0)}, "The load alone before a step could not be read"},
	} {
		var buf bytes.Buffer
		writeLevels(&buf, c.points, 1.5)
		if !strings.Contains(buf.String(), c.want) || strings.Contains(buf.String(), "NaN") {
			t.Errorf("the levels of %v say %q, want %q", c.points, buf.String(), c.want)
		}
	}
}

// TestDrainsWithoutAFloor: a run of the steps and the window alone (-phases steps,heavy) has no
// floor to read the window's rate against, and says so rather than NaN.
func TestDrainsWithoutAFloor(t *testing.T) {
	rep := &report{heavy: &drainResult{name: "under the foreground load", pacing: "auto", pastes: 494000, seconds: 600.5, windowed: true}}
	var b strings.Builder
	writeDrains(&b, rep)
	if out := b.String(); strings.Contains(out, "NaN") || !strings.Contains(out, "| 823 | – (no floor measured) |") {
		t.Errorf("the end-to-end table without a floor:\n%s", out)
	}
}
