package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"pastebin/store"
	"pastebin/tools/internal/benchdata"
)

// phaseDB is the database each phase restores from the template and drops after.
const phaseDB = "pb_heavy_run"

// report is everything one run measured.
type report struct {
	cfg     config
	meta    dataMeta
	floor   *floorResult
	unpaced *drainResult
	steps   []stepResult // the plant: the users' latency at fixed budgets
	heavy   *drainResult // with baseline and during set
	replay  *stepResult  // the paced window's settled rate again, as a step
}

type floorResult struct {
	pastes  int64
	seconds float64
	wal     int64 // bytes of WAL written meanwhile
	cpu     benchdata.CPUUse
}

func (f floorResult) rate() float64 { return float64(f.pastes) / f.seconds }

// drainResult is one drain by the replicas, end to end.
type drainResult struct {
	name       string
	pacing     string
	pastes     int64   // tombstoned, over every run
	seconds    float64 // from the first POST /admin/cleanup to the end of the last run, or of the window
	windowed   bool    // the window ended before the drain did
	runs       []store.Run
	samples    []sample // every second, from just before the start
	before     dbStats
	after      dbStats
	statements []benchdata.Statement
	explain    string           // the claim's plan from the front of the index, nine tenths into the drain
	cpu        benchdata.CPUUse // from the first POST /admin/cleanup to the end of the last run
	baseCPU    benchdata.CPUUse // the foreground load alone
	peakRSS    []int64
	deadlocks  int64
	baseline   []outcome // the foreground load alone, just before the drain
	during     []outcome // the foreground load while the drain ran
}

func (d drainResult) rate() float64 { return float64(d.pastes) / d.seconds }

// usersRatio is the users' p99 over the whole drain against the baseline's over as long: the
// paced window's reading, as the target states it.
func (d drainResult) usersRatio() float64 {
	return float64(statsOf(d.during).p99) / float64(statsOf(d.baseline).p99)
}

func (b *bench) measure(ctx context.Context) (*report, error) {
	rep := &report{cfg: b.cfg, meta: b.meta}
	if err := os.MkdirAll(b.cfg.out, 0o755); err != nil {
		return nil, err
	}
	for _, phase := range b.cfg.phases {
		var err error
		switch phase {
		case phaseFloor:
			err = b.inPhase(ctx, func() (err error) { rep.floor, err = b.measureFloor(ctx); return err })
		case phaseUnpaced:
			err = b.inPhase(ctx, func() (err error) {
				rep.unpaced, err = b.drain(ctx, "unpaced, no foreground load", replicaSettings{pacing: "off"}, false)
				return err
			})
		case phaseSteps:
			err = b.measureSteps(ctx, rep)
		case phaseHeavy:
			err = b.inPhase(ctx, func() (err error) {
				s := replicaSettings{pacing: b.cfg.pacing, maxRate: b.cfg.maxRate, budget: b.cfg.budget}
				rep.heavy, err = b.drain(ctx, "under the foreground load", s, true)
				return err
			})
		case phaseReplay:
			err = b.measureReplay(ctx, rep)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", phase, err)
		}
		// After every phase, so that an interrupted run keeps what it measured.
		if err := b.write(rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// inPhase runs measure on a fresh copy of the data, and drops the copy after.
func (b *bench) inPhase(ctx context.Context, measure func() error) error {
	if err := b.restore(ctx, phaseDB); err != nil {
		return err
	}
	if err := measure(); err != nil {
		return err
	}
	return b.dbs.Drop(ctx, phaseDB)
}

// setWALBudget sets max_wal_size for the run (empty: back to the server's own setting): a drain of
// ten million pastes writes about 17 GB of WAL, which the bench profile's 16 GB would keep on disk.
func (b *bench) setWALBudget(ctx context.Context, size string) error {
	q := "ALTER SYSTEM RESET max_wal_size"
	if size != "" {
		q = fmt.Sprintf("ALTER SYSTEM SET max_wal_size = '%s'", size)
	}
	if _, err := b.dbs.Admin().Exec(ctx, q); err != nil {
		return err
	}
	_, err := b.dbs.Admin().Exec(ctx, "SELECT pg_reload_conf()")
	return err
}

func (b *bench) measureFloor(ctx context.Context) (*floorResult, error) {
	b.logf("floor: cleaning %d pastes in one set-based transaction", b.cfg.expired)
	st, err := store.Open(ctx, b.dbs.URL(phaseDB), b.logger)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	parts := b.cpuParts(ctx, nil)
	before, err := readDBStats(ctx, st.Pool())
	if err != nil {
		return nil, err
	}
	start := benchdata.TakeCPU(parts)
	n, elapsed, err := benchdata.Floor(ctx, st.Pool())
	if err != nil {
		return nil, err
	}
	f := &floorResult{pastes: n, seconds: elapsed.Seconds(), cpu: benchdata.TakeCPU(parts).Since(start)}
	after, err := readDBStats(ctx, st.Pool())
	if err != nil {
		return nil, err
	}
	f.wal = after.walBytes - before.walBytes
	b.logf("floor: %d pastes in %.1f s, %.0f pastes/s", n, f.seconds, f.rate())
	return f, benchdata.Verify(ctx, st.Pool(), false)
}

// drain starts the replicas on a fresh copy of the data and has them drain it, with the foreground
// load (first alone, for the baseline, then during the drain, for the window) if withLoad.
func (b *bench) drain(ctx context.Context, name string, s replicaSettings, withLoad bool) (*drainResult, error) {
	d := &drainResult{name: name, pacing: s.pacing}
	logs := filepath.Join(b.cfg.out, "logs", map[bool]string{false: "unpaced", true: "heavy"}[withLoad])
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, b.dbs.URL(phaseDB), b.logger)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	s.db, s.logTo = phaseDB, logs
	rs, err := b.startReplicas(ctx, s)
	if err != nil {
		return nil, err
	}
	if withLoad {
		err = b.drainUnderLoad(ctx, st, rs, d)
	} else {
		err = b.follow(ctx, st, rs, d, time.Time{}, 0, nil)
	}
	d.peakRSS = stopReplicas(rs)
	if err != nil {
		return nil, err
	}
	if d.deadlocks, err = b.dbs.Deadlocks(ctx, phaseDB); err != nil {
		return nil, err
	}
	b.logf("%s: %d pastes in %.1f s, %.0f pastes/s; checking the database", name, d.pastes, d.seconds, d.rate())
	if d.windowed {
		return d, nil // stopped in the middle: what is left is for no check
	}
	return d, benchdata.Verify(ctx, st.Pool(), true)
}

// drainUnderLoad runs the foreground load alone for the baseline, then the drain while the load
// goes on.
func (b *bench) drainUnderLoad(ctx context.Context, st *store.Store, rs []*replica, d *drainResult) error {
	stop, done := make(chan struct{}), make(chan struct{})
	fg, err := b.startLoad(ctx, rs, stop, done)
	if err != nil {
		return err
	}
	defer func() { close(stop); <-done }()
	b.logf("%s: baseline, the foreground load alone for %s", d.name, b.cfg.baseline)
	fg.setRecording(true)
	parts := b.cpuParts(ctx, rs)
	start := benchdata.TakeCPU(parts)
	if err := watch(ctx, rs, b.cfg.baseline); err != nil {
		return err
	}
	d.baseline, d.baseCPU = fg.take(), benchdata.TakeCPU(parts).Since(start)
	err = b.follow(ctx, st, rs, d, time.Now().Add(b.cfg.window), 0, nil)
	d.during = fg.take()
	return err
}

// startLoad warms the replicas' caches with the popular pastes, then starts the load, unrecorded.
func (b *bench) startLoad(ctx context.Context, rs []*replica, stop, done chan struct{}) (*foreground, error) {
	var urls []string
	for _, r := range rs {
		urls = append(urls, r.url)
	}
	fg := newForeground(urls, b.meta.LiveSample)
	for _, code := range fg.hot {
		resp, err := rs[0].client.Get(rs[0].url + "/raw/" + code)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("warming the cache: GET /raw/%s answered %s", code, resp.Status)
		}
	}
	go func() { fg.attack(b.cfg.rate, stop); close(done) }()
	return fg, sleep(ctx, 15*time.Second)
}

// follow starts a cleanup run on every replica and follows the drain until every run has ended, or
// until until (zero: no end): the replicas' metrics every second, the database before and after, the
// claim's plan near the end. With settle, the drain runs that long before any of it is measured,
// and settled is called when the measurement starts.
func (b *bench) follow(ctx context.Context, st *store.Store, rs []*replica, d *drainResult, until time.Time, settle time.Duration, settled func()) error {
	var ids []int64
	var err error
	if settle > 0 {
		if ids, err = b.startRuns(ctx, rs, d); err != nil {
			return err
		}
		if err := b.settle(ctx, rs, settle); err != nil {
			return err
		}
		settled()
	}
	if d.before, err = readDBStats(ctx, st.Pool()); err != nil {
		return err
	}
	if err := benchdata.ResetStatements(ctx, st.Pool()); err != nil {
		return err
	}
	first, err := scrape(ctx, rs)
	if err != nil {
		return err
	}
	d.samples = append(d.samples, first)
	parts := b.cpuParts(ctx, rs)
	startCPU := benchdata.TakeCPU(parts)
	start := time.Now()
	if ids == nil {
		if ids, err = b.startRuns(ctx, rs, d); err != nil {
			return err
		}
	}
	for done := false; !done; {
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
		s, err := scrape(ctx, rs)
		if err != nil {
			return err
		}
		d.samples = append(d.samples, s)
		if d.explain == "" && s.tombstoned >= 0.9*float64(b.cfg.expired) {
			if d.explain, err = st.ExplainClaim(ctx, 1000, time.Time{}); err != nil {
				return err
			}
		}
		if done, err = b.runsEnded(ctx, rs, ids, d); err != nil {
			return err
		}
		if !done && !until.IsZero() && time.Now().After(until) {
			d.windowed, d.pastes, done = true, int64(s.tombstoned-d.samples[0].tombstoned), true
		}
		if len(d.samples)%30 == 0 {
			b.logf("%s: %.0f pastes cleaned, %.0f/s in the last second", d.name, s.tombstoned, s.tombstoned-d.samples[len(d.samples)-2].tombstoned)
		}
	}
	d.seconds, d.cpu = time.Since(start).Seconds(), benchdata.TakeCPU(parts).Since(startCPU)
	if err := sleep(ctx, 2*time.Second); err != nil { // backends report their table statistics within a second
		return err
	}
	if d.after, err = readDBStats(ctx, st.Pool()); err != nil {
		return err
	}
	d.statements, err = benchdata.TopStatements(ctx, st.Pool(), 10)
	return err
}

// settle lets the drain run unmeasured for d, or until it has cleaned half the backlog: a small
// run's fast steps would otherwise leave nothing to measure.
func (b *bench) settle(ctx context.Context, rs []*replica, d time.Duration) error {
	for end := time.Now().Add(d); time.Now().Before(end); {
		if err := sleep(ctx, min(time.Second, time.Until(end))); err != nil {
			return err
		}
		s, err := scrape(ctx, rs)
		if err != nil {
			return err
		}
		if s.tombstoned >= float64(b.cfg.expired)/2 {
			return nil
		}
	}
	return nil
}

// startRuns starts a cleanup run on every replica and returns their ids.
func (b *bench) startRuns(ctx context.Context, rs []*replica, d *drainResult) ([]int64, error) {
	ids := make([]int64, len(rs))
	for i, r := range rs {
		var err error
		if ids[i], err = r.startCleanup(ctx); err != nil {
			return nil, err
		}
	}
	b.logf("%s: %d runs started (pacing %s)", d.name, len(rs), d.pacing)
	return ids, nil
}

// watch scrapes the replicas' metrics every second for d, as follow does during a drain: a scrape
// costs the users too (each replica encodes its metrics and reads the spam signal from Redis and
// PostgreSQL), so the load alone is measured with it, or a drain's ratio would count the scrapes.
func watch(ctx context.Context, rs []*replica, d time.Duration) error {
	for end := time.Now().Add(d); time.Now().Before(end); {
		if err := sleep(ctx, min(time.Second, time.Until(end))); err != nil {
			return err
		}
		if _, err := scrape(ctx, rs); err != nil {
			return err
		}
	}
	return nil
}

// runsEnded reads every run's report; once none is running it records them and reports true.
func (b *bench) runsEnded(ctx context.Context, rs []*replica, ids []int64, d *drainResult) (bool, error) {
	var runs []store.Run
	for i, r := range rs {
		run, err := r.run(ctx, ids[i])
		if err != nil {
			return false, err
		}
		if run.Status == "running" {
			return false, nil
		}
		runs = append(runs, run)
	}
	d.runs, d.pastes = runs, 0
	for _, run := range runs {
		if run.Status != "finished" {
			return true, fmt.Errorf("%w: run %d %s: %s", errRunFailed, run.ID, run.Status, run.LastError)
		}
		d.pastes += run.Tombstoned
	}
	d.pastes -= int64(d.samples[0].tombstoned) // what a settling drain cleaned before it was measured
	return true, nil
}

// dbStats is what the database says of itself at one moment.
type dbStats struct {
	walBytes                   int64
	deadPastes, deadContent    int64
	vacuumsPastes, vacuumsCont int64 // autovacuum runs so far
	idxCleanup, idxWatchdog    int64 // bytes
}

func readDBStats(ctx context.Context, pool *pgxpool.Pool) (dbStats, error) {
	var s dbStats
	err := pool.QueryRow(ctx, `
		SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
		       (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'pastes'),
		       (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'content'),
		       (SELECT autovacuum_count FROM pg_stat_user_tables WHERE relname = 'pastes'),
		       (SELECT autovacuum_count FROM pg_stat_user_tables WHERE relname = 'content'),
		       pg_relation_size('idx_cleanup_expired'), pg_relation_size('idx_watchdog_stuck')`).Scan(
		&s.walBytes, &s.deadPastes, &s.deadContent, &s.vacuumsPastes, &s.vacuumsCont, &s.idxCleanup, &s.idxWatchdog)
	return s, err
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
