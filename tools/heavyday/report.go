package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"pastebin/tools/internal/benchdata"
)

// write writes the report of the phases measured so far, with the plot, to the output folder.
func (b *bench) write(rep *report) error {
	var buf bytes.Buffer
	b.writeReport(&buf, rep)
	path := filepath.Join(b.cfg.out, "report.md")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return err
	}
	b.logf("report so far written to %s", path)
	for name, d := range map[string]*drainResult{"unpaced": rep.unpaced, "heavy": rep.heavy} {
		if d == nil {
			continue
		}
		if err := writeTimeline(filepath.Join(b.cfg.out, "timeline-"+name+".csv"), d); err != nil {
			return err
		}
	}
	if rep.heavy == nil {
		return nil
	}
	if len(rep.steps) > 0 {
		if err := writeFrontPlot(filepath.Join(b.cfg.out, "front.png"), rep); err != nil {
			return err
		}
	}
	return writePlot(filepath.Join(b.cfg.out, "heavyday.png"), rep)
}

// writeTimeline writes a drain's course, second by second, for a closer look than the plot's.
func writeTimeline(path string, d *drainResult) error {
	s := seriesOf(d, 1)
	var buf bytes.Buffer
	buf.WriteString("seconds,pastes_per_second,rate_limit,pacing_signal,claim_p99_ms,users_p99_ms,pacing_aim\n")
	for i := range s.t {
		fmt.Fprintf(&buf, "%.0f,%.0f,%.0f,%.2f,%.1f,%.1f,%.2f\n", s.t[i], s.rate[i], s.limit[i], s.signal[i], s.claimP99[i], s.fgP99[i],
			s.aim[i])
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func (b *bench) writeReport(w io.Writer, rep *report) {
	cfg, m := rep.cfg, rep.meta
	fmt.Fprintf(w, "# Heavy day: %s expired pastes among %s\n\n", count(cfg.expired), count(cfg.expired+cfg.live))
	fmt.Fprintf(w, "Measured %s on %d cores (load average at the end: %s) with `%s` (as `make bench-heavyday` runs it): "+
		"%d replicas × %d cleanup workers, batch %d; foreground load %d requests/s; max_wal_size %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), loadAverage(), strings.Join(append([]string{"bin/heavyday"}, cfg.args...), " "),
		cfg.replicas, cfg.workers, cfg.batchSize, cfg.rate, cfg.walBudget)
	fmt.Fprintf(w, "Data: %.0f%% of pastes share content; the drain frees %s content rows, the first %s of which "+
		"have real blobs in S3 (versitygw), the rest keys S3 no longer has. Loaded in %s (database) and %s (blobs).\n\n",
		cfg.shared*100, count(int(m.Freed)), count(int(m.RealBlobs)), secs(m.LoadSeconds), secs(m.BlobsSeconds))
	writeDrains(w, rep)
	writeTargets(w, rep)
	writeFront(w, rep)
	writeReplay(w, rep)
	writeCPU(w, rep)
	for _, d := range []*drainResult{rep.unpaced, rep.heavy} {
		if d != nil {
			b.writeDrain(w, d)
		}
	}
	if d := rep.heavy; d != nil {
		writeForeground(w, d)
	}
}

func writeDrains(w io.Writer, rep *report) {
	fmt.Fprintf(w, "## End to end\n\n| | pastes | seconds | pastes/s | vs floor |\n|---|---|---|---|---|\n")
	f := rep.floor
	if f != nil {
		fmt.Fprintf(w, "| floor: set-based, one transaction, no S3 or Redis | %s | %.1f | %.0f | 1.00 |\n", count(int(f.pastes)), f.seconds, f.rate())
	}
	for _, d := range []*drainResult{rep.unpaced, rep.heavy} {
		if d == nil {
			continue
		}
		name := d.name
		if d.windowed {
			name += ", a window of it"
		}
		vsFloor := "– (no floor measured)"
		if f != nil {
			vsFloor = fmt.Sprintf("%.2f", d.rate()/f.rate())
		}
		fmt.Fprintf(w, "| drain %s (pacing %s) | %s | %.1f | %.0f | %s |\n", name, d.pacing, count(int(d.pastes)), d.seconds, d.rate(), vsFloor)
	}
	fmt.Fprintln(w)
}

func writeTargets(w io.Writer, rep *report) {
	fmt.Fprintf(w, "## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	row := func(target, measured string, v verdict) {
		fmt.Fprintf(w, "| %s | %s | %s |\n", target, measured, v)
	}
	writeUnpacedTargets(rep, row)
	if d := rep.unpaced; d != nil {
		all := d.samples[len(d.samples)-1].claim.minus(d.samples[0].claim)
		row("unpaced: claim p99 under 50 ms", msf(all.quantile(0.99)), judged(all.quantile(0.99) < 0.050))
		if ts := tenths(d); len(ts) == 10 {
			first, last := ts[0].pastes/ts[0].seconds, ts[9].pastes/ts[9].seconds
			// One-sided: what the target guards against is a drain that slows as the table empties.
			// The seed makes the last tenths faster (their pastes mostly share content, so a batch
			// decrements rather than frees: docs/performance.md), and that is not a miss.
			row("unpaced: last tenth within 25% of the first (no slower than 0.75× of it)",
				fmt.Sprintf("%.0f against %.0f pastes/s (%+.0f%%); claim p99 %s against %s", last, first, 100*(last/first-1),
					msf(ts[9].claim.quantile(0.99)), msf(ts[0].claim.quantile(0.99))), judged(last >= 0.75*first))
		}
	}
	writePacedTargets(rep, row)
	fmt.Fprintln(w)
}

// floorShare is the share of the floor's rate the unpaced drain is held to: 0.8 at ten million
// pastes, 0.7 at a million or fewer.
func floorShare(expired int) float64 {
	if expired >= 5_000_000 {
		return 0.8
	}
	return 0.7
}

// perPaste is the WAL (bytes) and PostgreSQL's processor time (µs) the unpaced drain and the floor
// spent per cleaned paste.
func perPaste(rep *report) (walDrain, walFloor, cpuDrain, cpuFloor float64) {
	d, f := rep.unpaced, rep.floor
	walDrain = float64(d.after.walBytes-d.before.walBytes) / float64(d.pastes)
	walFloor = float64(f.wal) / float64(f.pastes)
	return walDrain, walFloor, d.cpu.Microseconds(cpuPostgres, d.pastes), f.cpu.Microseconds(cpuPostgres, f.pastes)
}

func writeUnpacedTargets(rep *report, row func(string, string, verdict)) {
	d, f := rep.unpaced, rep.floor
	if d == nil || f == nil {
		return
	}
	share := floorShare(rep.cfg.expired)
	// Three places: two would print 0.795 as 0.80 beside a "no".
	row(fmt.Sprintf("unpaced, no users: ≥ %.1f of the floor", share), fmt.Sprintf("%.3f", d.rate()/f.rate()), judged(d.rate()/f.rate() >= share))
	walDrain, walFloor, cpuDrain, cpuFloor := perPaste(rep)
	row("unpaced: WAL ≤ 1,500 bytes per cleaned paste", fmt.Sprintf("%.0f bytes (the floor: %.0f, %.2f×)", walDrain, walFloor, walDrain/walFloor), judged(walDrain <= 1500))
	row("unpaced: PostgreSQL's CPU ≤ 1.6× the floor's per cleaned paste",
		fmt.Sprintf("%.0f µs against %.0f µs: %.2f×", cpuDrain, cpuFloor, cpuDrain/cpuFloor), judged(cpuDrain <= 1.6*cpuFloor))
}

func writePacedTargets(rep *report, row func(string, string, verdict)) {
	d := rep.heavy
	if d == nil {
		return
	}
	base, during := statsOf(d.baseline), statsOf(d.during)
	ratio := d.usersRatio()
	budget := rep.cfg.budget
	row(fmt.Sprintf("paced: users' p99 over the window ≤ %.1f× the baseline's, over as long", budget),
		fmt.Sprintf("%s against %s: %.2f×", ms(during.p99), ms(base.p99), ratio), judged(ratio <= budget))
	row("paced: zero foreground errors", fmt.Sprintf("%d of %d", during.errors, during.requests), judged(during.errors == 0))
	if len(rep.steps) == 0 {
		return
	}
	own := rep.frontOf(ownLevel)
	_, best := bestOnFront(own, budget)
	_, bestOne := bestOnFront(rep.frontOf(oneLevel(rep.windowBaseline())), budget)
	settled := settledRate(d)
	measured := fmt.Sprintf("%.0f against %.0f pastes/s: %+.0f%% (every step against the window's baseline: %.0f, %+.0f%%; "+
		"the whole window, its climb from the floor included: %.0f)",
		settled, best, 100*(settled/best-1), bestOne, 100*(settled/bestOne-1), d.rate())
	v := judged(math.Abs(settled/best-1) <= 0.15)
	if why := levelsCannotPlace(own, budget); why != "" {
		measured += "; " + why
		v = notJudged
	}
	row(fmt.Sprintf("paced: the automatic rate (the window's second half) within 15%% of the front's highest within %.1f× "+
		"(each step read against the load alone just before it, as the window is)", budget), measured, v)
	hours := 10e6 / settled / 3600
	row("paced: 10 million pastes cleaned before morning (6 hours) at that rate", fmt.Sprintf("%.1f hours", hours), judged(hours <= 6))
}

// writeFront writes the plant the pacing steers: each step's drain rate against the users' p99
// over its level with no drain, and where the paced window landed.
func writeFront(w io.Writer, rep *report) {
	if len(rep.steps) == 0 {
		return
	}
	budget := rep.cfg.budget
	baseline := rep.windowBaseline()
	fmt.Fprintf(w, "## The front: the users' latency at fixed budgets\n\n"+
		"Each step restores the same backlog, starts both replicas with `PASTEBIN_CLEANUP_PACING=off` and the budget as "+
		"`PASTEBIN_CLEANUP_MAX_RATE` (the deployment's), runs the foreground load alone for %s (the replicas' start; its last "+
		"%s is the step's level with no drain), then starts the drain, lets it run %s unmeasured (the users answer a drain late; less if half the "+
		"backlog goes first), "+
		"and measures %s under the load. A step's users' p99 "+
		"is read against that level, as the paced window's is against the load alone just before it. The last columns read "+
		"it against the window's baseline instead, over windows as long (the median of its windows' p99s), as the reports "+
		"up to run J did.\n\n",
		secs(rep.cfg.stepWarmup.Seconds()), secs(rep.cfg.stepLevelSpan().Seconds()), secs(rep.cfg.stepSettle.Seconds()),
		secs(rep.cfg.stepLength.Seconds()))
	fmt.Fprintf(w, "| budget | drain pastes/s | users p50 | users p99 | the load alone before | p99 / it | within %.1f× "+
		"| p99 / the window's baseline | within | finishing p50 | errors |\n|---|---|---|---|---|---|---|---|---|---|---|\n", budget)
	byWindow := front(rep.steps, oneLevel(baseline), budget)
	for i, p := range front(rep.steps, ownLevel, budget) {
		ratio, within := "–", "–"
		if !math.IsNaN(baseline) {
			ratio, within = fmt.Sprintf("%.2f×", byWindow[i].ratio), yesNo(byWindow[i].meetsBound)
		}
		fmt.Fprintf(w, "| %s | %.0f | %.1f ms | %.1f ms | %.1f ms | %.2f× | %s | %s | %s | %s | %d |\n", p.name(rep.cfg.batchSize),
			p.rate, p.p50, p.p99, p.level, p.ratio, yesNo(p.meetsBound), ratio, within, msf(p.finishP50), statsOf(rep.steps[i].d.during).errors)
	}
	own := rep.frontOf(ownLevel)
	step, crossing := bestOnFront(own, budget)
	fmt.Fprintf(w, "\nThe highest rate on the front within %.1f×: %.0f pastes/s measured, %.0f where the front crosses the budget "+
		"(between two steps, on the logarithm of the rate).", budget, step, crossing)
	_, fitted := bestOnFront(monotone(own, budget), budget)
	fmt.Fprintf(w, " Fitted to the plant's shape, never falling as the rate rises (adjacent steps out of that order "+
		"pooled to their mean ratio), it crosses at %.0f.", fitted)
	writeLevels(w, own, budget)
	if math.IsNaN(baseline) {
		// A report written between the steps and the paced window, which measures its baseline.
		fmt.Fprintf(w, " The last columns wait for the paced window's baseline.\n\n")
		return
	}
	_, crossingOne := bestOnFront(rep.frontOf(oneLevel(baseline)), budget)
	fmt.Fprintf(w, " Against the window's baseline (%s) for every step, it crosses at %.0f.", msf(baseline/1000), crossingOne)
	if d := rep.heavy; d != nil {
		settled := settledRate(d)
		fmt.Fprintf(w, " The controller's point: %.0f pastes/s over the paced window's second half (%.0f over all %s, its climb "+
			"from the floor included) at %.2f× over the whole window, %+.0f%% of the crossing (%+.0f%% of the one against the "+
			"window's baseline, %+.0f%% of the fitted one); at that rate 10 million pastes take %.1f hours.",
			settled, d.rate(), secs(d.seconds), d.usersRatio(), 100*(settled/crossing-1), 100*(settled/crossingOne-1),
			100*(settled/fitted-1), 10e6/settled/3600)
	}
	fmt.Fprintf(w, " Plotted in `front.png`.\n\n")
}

// writeLevels says how far the steps' levels, the load alone before each, moved from step to step:
// where they moved by more than the budget allows the drain, the front reads the day's moves as
// much as the drain's (run M: 19 to 51 ms, every step up to 4,000 pastes/s under its level).
// Otherwise it says what their spread is worth in the crossing: near the budget the front is
// shallow (run N: 1.23× a doubling of the rate), so a level a few hundredths off moves the
// crossing by far more than the rate target's 15%.
func writeLevels(w io.Writer, points []frontPoint, budget float64) {
	if len(points) < 2 {
		return
	}
	if why := levelsCannotPlace(points, budget); why != "" {
		fmt.Fprintf(w, " The %s: the front reads the day's moves as much as the drain's, and this day cannot "+
			"place the controller on it.", strings.TrimPrefix(why, "the "))
		return
	}
	lo, hi := levelsRange(points)
	spread := levelsSpread(points)
	fmt.Fprintf(w, " The load alone before the steps read %s to %s", msf(lo/1000), msf(hi/1000))
	fmt.Fprintf(w, ", a (sample) standard deviation of %.0f%% of their mean: with every level that much lower, the "+
		"front would cross the budget %s, and that much higher, %s.", 100*spread,
		crossingWithLevels(points, 1-spread, budget), crossingWithLevels(points, 1+spread, budget))
}

// levelsSpread is the steps' levels' sample standard deviation as a share of their mean; 0 for
// fewer than two.
func levelsSpread(points []frontPoint) float64 {
	if len(points) < 2 {
		return 0
	}
	var sum, sq float64
	for _, p := range points {
		sum += p.level
	}
	mean := sum / float64(len(points))
	for _, p := range points {
		sq += (p.level - mean) * (p.level - mean)
	}
	return math.Sqrt(sq/float64(len(points)-1)) / mean
}

// crossingWithLevels says where the front would cross the budget were every step's level k times
// what was measured: at a rate between two steps, or, where it would not cross between them, under
// the slowest step or past the fastest.
func crossingWithLevels(points []frontPoint, k, budget float64) string {
	moved := make([]frontPoint, len(points))
	for i, p := range points {
		moved[i] = p.against(k*p.level, budget)
	}
	sorted := byRate(moved)
	switch slowest, fastest := sorted[0], sorted[len(sorted)-1]; {
	case !slowest.meetsBound:
		return fmt.Sprintf("under its slowest step (%.0f pastes/s)", slowest.rate)
	case fastest.meetsBound:
		return fmt.Sprintf("past its fastest step (%.0f pastes/s)", fastest.rate)
	}
	_, crossing := bestOnFront(moved, budget)
	return fmt.Sprintf("at %.0f pastes/s", crossing)
}

// levelsCannotPlace says why the steps' levels cannot place the controller on the front, "" where
// they can: a level that could not be read, or levels that moved by more than the budget allows the
// drain, where the crossing is where the day's moves put it and there is nothing to hold the rate to
// (run M: 19 to 51 ms).
func levelsCannotPlace(points []frontPoint, budget float64) string {
	switch lo, hi := levelsRange(points); {
	case !(lo > 0):
		return "the load alone before a step could not be read"
	case hi/lo > budget:
		return fmt.Sprintf("the load alone before the steps read %s to %s: it moved by %.2f×, more than the "+
			"budget allows the drain", msf(lo/1000), msf(hi/1000), hi/lo)
	}
	return ""
}

// levelsRange is the lowest and highest of the steps' levels (ms): only their ratio says anything,
// and with no steps it is 1.
func levelsRange(points []frontPoint) (lo, hi float64) {
	if len(points) == 0 {
		return 1, 1
	}
	lo, hi = math.Inf(1), 0.0
	for _, p := range points {
		lo, hi = min(lo, p.level), max(hi, p.level)
	}
	return lo, hi
}

// verdict is a target's last column: met, missed, or not judged where the day cannot say.
type verdict string

const (
	met       verdict = "yes"
	missed    verdict = "**no**"
	notJudged verdict = "not judged"
)

func judged(ok bool) verdict {
	if ok {
		return met
	}
	return missed
}

func yesNo(b bool) string { return map[bool]string{true: "yes", false: "no"}[b] }

// writeReplay places the replay (phaseReplay) beside the window it replays and the front: a replay
// that reads what the window read says the users' latency moved between the steps and the window;
// one that reads what the front reads says the window's own drain cost them more.
func writeReplay(w io.Writer, rep *report) {
	d := rep.heavy
	if rep.replay == nil || d == nil {
		return
	}
	window := oneLevel(rep.windowBaseline())
	r, rOne := rep.replayPoint(ownLevel), rep.replayPoint(window)
	at, atOne := frontAt(rep.frontOf(ownLevel), r.rate), frontAt(rep.frontOf(window), r.rate)
	none := "nothing (no steps around it)"
	fmt.Fprintf(w, "## The paced window replayed as a step\n\n"+
		"The window's rate over its second half, %.0f pastes/s, run again as a step after it (`replay`), from the same backlog "+
		"after %s of the load alone and %s of the drain unmeasured: the drain ran at %.0f pastes/s for %s and the users' p99 "+
		"read %.1f ms. That is %.2f× the "+
		"load alone just before it (%.1f ms), where the window read %.2f× against the load alone before it and the front "+
		"reads %s at that rate; and %.2f× the window's baseline, where the front, every step read against that baseline, reads %s. "+
		"A replay that reads what the window read says the users' latency moved between the steps and the window; one that "+
		"reads what the front reads says the window's own drain cost them more than a steady one.\n\n",
		settledRate(d), secs(rep.cfg.stepWarmup.Seconds()), secs(rep.cfg.stepSettle.Seconds()), r.rate,
		secs(rep.cfg.stepLength.Seconds()), r.p99, r.ratio, r.level,
		d.usersRatio(), ratioOr(at, none), rOne.ratio, ratioOr(atOne, none))
}

func ratioOr(ratio float64, none string) string {
	if math.IsNaN(ratio) {
		return none
	}
	return fmt.Sprintf("%.2f×", ratio)
}

// writeCPU writes where the processor time went in each phase: which process the machine's cores
// worked for, and for how long per cleaned paste.
func writeCPU(w io.Writer, rep *report) {
	type column struct {
		name   string
		use    benchdata.CPUUse
		pastes int64 // cleaned meanwhile; 0: none
	}
	var cols []column
	if f := rep.floor; f != nil {
		cols = append(cols, column{"floor", f.cpu, f.pastes})
	}
	if d := rep.unpaced; d != nil {
		cols = append(cols, column{"drain, no load", d.cpu, d.pastes})
	}
	if d := rep.heavy; d != nil {
		cols = append(cols, column{"the load alone", d.baseCPU, 0}, column{"drain under the load", d.cpu, d.pastes})
	}
	parts := slices.DeleteFunc(slices.Clone(cpuOrder), func(p string) bool {
		return !slices.ContainsFunc(cols, func(c column) bool { return slices.Contains(c.use.Parts, p) })
	})
	if len(parts) == 0 {
		return
	}
	fmt.Fprintf(w, "## Where the processor time went\n\nCores busy on average (processor seconds per second, from /proc; %d cores in all), "+
		"and processor time per cleaned paste:\n\n|", runtime.NumCPU())
	for _, c := range cols {
		fmt.Fprintf(w, " | %s", c.name)
	}
	fmt.Fprintf(w, " |\n|---%s|\n", strings.Repeat("|---", len(cols)))
	for _, p := range parts {
		fmt.Fprintf(w, "| %s", p)
		for _, c := range cols {
			cores, ok := c.use.Cores[p]
			switch {
			case !ok:
				fmt.Fprint(w, " | –")
			case c.pastes > 0 && p != benchdata.CPUIdle:
				fmt.Fprintf(w, " | %.2f · %.0f µs", cores, cores*c.use.Seconds/float64(c.pastes)*1e6)
			default:
				fmt.Fprintf(w, " | %.2f", cores)
			}
		}
		fmt.Fprintln(w, " |")
	}
	fmt.Fprintln(w)
}

func (b *bench) writeDrain(w io.Writer, d *drainResult) {
	fmt.Fprintf(w, "## Drain %s\n\n", d.name)
	fmt.Fprintf(w, "| tenth | seconds | pastes/s | claim p50 | claim p99 | finishing p50 | finishing p99 | rate limit at its end |\n|---|---|---|---|---|---|---|---|\n")
	for i, t := range tenths(d) {
		limit := "none"
		if t.rateLimit > 0 {
			limit = fmt.Sprintf("%.0f/s", t.rateLimit)
		}
		fmt.Fprintf(w, "| %d | %.1f | %.0f | %s | %s | %s | %s | %s |\n", i+1, t.seconds, t.pastes/t.seconds,
			msf(t.claim.quantile(0.5)), msf(t.claim.quantile(0.99)), msf(t.finish.quantile(0.5)), msf(t.finish.quantile(0.99)), limit)
	}
	fmt.Fprintf(w, "\nLatencies from the replicas' histograms (`pastebin_cleanup_claim_seconds`, `_finish_seconds`), "+
		"interpolated within their buckets as histogram_quantile does.\n\n")
	real, absent := b.s3Split(d)
	all := d.samples[len(d.samples)-1].s3.minus(d.samples[0].s3)
	fmt.Fprintf(w, "S3 `DeleteObjects`, one call per batch: in all %s calls, p50 %s, p99 %s; "+
		"while the freed blobs really existed %s calls, p50 %s, p99 %s, mean %s; once S3 no longer had them %s calls, p50 %s, p99 %s, mean %s.\n\n",
		count(int(all.count)), msf(all.quantile(0.5)), msf(all.quantile(0.99)),
		count(int(real.count)), msf(real.quantile(0.5)), msf(real.quantile(0.99)), msf(real.mean()),
		count(int(absent.count)), msf(absent.quantile(0.5)), msf(absent.quantile(0.99)), msf(absent.mean()))
	n := float64(d.pastes)
	fmt.Fprintf(w, "Database: %.0f bytes of WAL per cleaned paste (%.1f GB in all, the foreground load's included); "+
		"dead tuples at the end %.2f per cleaned paste in `pastes` and %.2f in `content` (autovacuum ran %d and %d times meanwhile); "+
		"%d deadlocks. `idx_cleanup_expired` %s → %s, `idx_watchdog_stuck` %s → %s.\n\n",
		float64(d.after.walBytes-d.before.walBytes)/n, float64(d.after.walBytes-d.before.walBytes)/1e9,
		float64(d.after.deadPastes)/n, float64(d.after.deadContent)/n,
		d.after.vacuumsPastes-d.before.vacuumsPastes, d.after.vacuumsCont-d.before.vacuumsCont, d.deadlocks,
		mb(d.before.idxCleanup), mb(d.after.idxCleanup), mb(d.before.idxWatchdog), mb(d.after.idxWatchdog))
	var rss []string
	for _, r := range d.peakRSS {
		rss = append(rss, mb(r))
	}
	fmt.Fprintf(w, "Peak RSS of the replicas: %s.\n\n", strings.Join(rss, ", "))
	writeRuns(w, d)
	fmt.Fprintf(w, "Where the database's time went (pg_stat_statements, the drain and the load together):\n\n| calls | total ms | mean ms | rows | statement |\n|---|---|---|---|---|\n")
	for _, s := range d.statements {
		fmt.Fprintf(w, "| %d | %.0f | %.2f | %d | `%s` |\n", s.Calls, s.TotalMs, s.Mean, s.Rows, strings.ReplaceAll(s.Query, "|", `\|`))
	}
	if d.explain != "" { // a paced window ends before nine tenths of the backlog
		fmt.Fprintf(w, "\nThe claim's scan from the front of the index, nine tenths into the drain (rolled back):\n\n```\n%s\n```\n\n", d.explain)
	}
}

func writeRuns(w io.Writer, d *drainResult) {
	if len(d.runs) == 0 {
		fmt.Fprintf(w, "The window ended while its runs were still draining: none had ended to report.\n")
	} else {
		writeRunTable(w, d)
	}
	cuts := d.samples[len(d.samples)-1].cuts - d.samples[0].cuts
	fmt.Fprintf(w, "\nThe automatic pacing cut the rate %.0f times.\n\n", cuts)
}

func writeRunTable(w io.Writer, d *drainResult) {
	fmt.Fprintf(w, "| run | replica | tombstoned | batches | content freed | blobs deleted | retried | errors | pacing | waited |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for i, r := range d.runs {
		limit := "none"
		if r.Pacing.RateLimit != nil {
			limit = fmt.Sprintf("%.0f/s", *r.Pacing.RateLimit)
		}
		fmt.Fprintf(w, "| %d | serve-%d | %s | %d | %s | %s | %d | %d | %s, %s %s | %.0f s |\n", r.ID, i+1, count(int(r.Tombstoned)),
			r.Batches, count(int(r.ContentFreed)), count(int(r.BlobsDeleted)), r.BatchesRetried, r.Errors,
			r.Pacing.Mode, limit, r.Pacing.Reason, r.Pacing.WaitedSeconds)
	}
}

func writeForeground(w io.Writer, d *drainResult) {
	fmt.Fprintf(w, "## The users: the foreground load, alone and during the drain\n\n")
	fmt.Fprintf(w, "| requests | alone: n | p50 | p99 | max | errors | during the drain: n | p50 | p99 | max | errors |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	row := func(name string, a, z []outcome) {
		sa, sz := statsOf(a), statsOf(z)
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %d | %d | %s | %s | %s | %d |\n", name,
			sa.requests, ms(sa.p50), ms(sa.p99), ms(sa.max), sa.errors, sz.requests, ms(sz.p50), ms(sz.p99), ms(sz.max), sz.errors)
	}
	row("all", d.baseline, d.during)
	kinds, base := byKind(d.baseline)
	_, during := byKind(d.during)
	for _, k := range kinds {
		row(k, base[k], during[k])
	}
	sb, sd := statsOf(d.baseline), statsOf(d.during)
	fmt.Fprintf(w, "\nThe baseline ran %s, the drain %s; open loop (vegeta), every request counted from when it was due. "+
		"Both with the replicas' metrics scraped every second, as every step is.\n\n", secs(sb.seconds), secs(sd.seconds))
}

func count(n int) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func msf(seconds float64) string {
	if math.IsNaN(seconds) {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", seconds*1000)
}

func mb(bytes int64) string { return fmt.Sprintf("%.1f MB", float64(bytes)/1e6) }

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

// settledRate is a drain's rate over the second half of its time: where the automatic pacing has
// climbed from its floor and found its level.
func settledRate(d *drainResult) float64 {
	last := d.samples[len(d.samples)-1]
	mid := d.samples[len(d.samples)/2]
	if secs := last.at.Sub(mid.at).Seconds(); secs > 0 {
		return (last.tombstoned - mid.tombstoned) / secs
	}
	return d.rate()
}
