package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// soak is one soak run: its processes, its database, and what it learnt.
type soak struct {
	cfg        config
	out        io.Writer
	dbName     string
	dataDir    string // Redis's and the S3 server's data, removed at the end
	cluster    *cluster
	pool       *pgxpool.Pool // the soak's own database, for the settle and final checks
	client     *client
	admin      *http.Client
	stats      *stats
	violations *violations
	ledger     *ledger
	timeline   *timeline  // serve kills and failed requests, for judging the balanced soak
	outMu      sync.Mutex // progress lines come from the fault controller too
}

// newSoak creates the soak's database and starts its processes.
func newSoak(ctx context.Context, cfg config, out io.Writer) (_ *soak, err error) {
	s := &soak{cfg: cfg, out: out, admin: &http.Client{Timeout: requestTimeout}, stats: &stats{},
		violations: &violations{}, ledger: &ledger{}, timeline: &timeline{}}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return nil, err
	}
	if s.dataDir, err = os.MkdirTemp(cfg.env.tmp, "pastebin-soak-"); err != nil {
		return nil, err
	}
	name, dbURL, err := createDatabase(ctx, cfg.adminURL)
	if err != nil {
		return nil, err
	}
	s.dbName = name
	if s.cluster, err = newCluster(cfg, dbURL, s.dataDir); err != nil {
		return nil, err
	}
	s.client = newClient(s.cluster.entry, cfg.clients, cfg.haproxy != "", s.timeline, s.stats)
	s.logf("starting %d serve processes, %d Redis nodes and versitygw; logs in %s", cfg.serves, len(s.cluster.redis.nodes), cfg.dir)
	if err := s.cluster.startWithin(ctx, 2*time.Minute, 2); err != nil {
		return nil, err
	}
	if s.pool, err = pgxpool.New(ctx, dbURL); err != nil {
		return nil, err
	}
	return s, nil
}

// close kills every process, drops the database (unless asked to keep it) and removes the data.
func (s *soak) close() {
	if s.cluster != nil {
		s.cluster.killAll()
	}
	if s.pool != nil {
		s.pool.Close()
	}
	if s.dbName != "" && !s.cfg.keepDB {
		if err := dropDatabase(s.cfg.adminURL, s.dbName); err != nil {
			s.logf("drop database %s: %v", s.dbName, err)
		}
	} else if s.dbName != "" {
		s.logf("kept database %s", s.dbName)
	}
	if s.dataDir != "" {
		os.RemoveAll(s.dataDir)
	}
}

// soak runs the load and the faults, lets everything settle, and checks the end state.
func (s *soak) soak(ctx context.Context) *summary {
	start := time.Now()
	sum := &summary{stats: s.stats, violations: s.violations, dir: s.cfg.dir, balanced: s.cfg.haproxy != ""}
	defer func() {
		sum.elapsed = time.Since(start)
		sum.notes = append(sum.notes, logEvents(s.cluster.serves))
	}()
	s.logf("load and faults for %s (at most %d operations), seed %d", s.cfg.duration, s.cfg.maxOps, s.cfg.seed)
	loadEnd := s.chaos(ctx)
	if ctx.Err() != nil {
		sum.notes = append(sum.notes, "interrupted: nothing was checked at the end")
		return sum
	}
	s.logf("load stopped after %d operations, every process is up; settling", s.stats.ops())
	// Every short-lived paste expires, then cleanup must finish all of them.
	sleep(ctx, time.Until(loadEnd.Add(maxShortLifetime*time.Second+clockMargin)))
	since := time.Now()
	runs, err := s.settle(ctx, since)
	if err != nil {
		s.violations.add("%v", err)
	}
	sum.notes = append(sum.notes, fmt.Sprintf("settled in %s, with %d cleanup runs asked for",
		time.Since(since).Round(100*time.Millisecond), runs))
	if report, err := s.sweepOrphans(ctx); err != nil {
		s.violations.add("final orphan sweep: %v", err)
	} else {
		sum.notes = append(sum.notes, "final orphan sweep: "+report)
	}
	s.logf("reading back %d pastes", s.ledger.len())
	sum.final = s.readBack(ctx)
	if _, err := s.settle(ctx, since); err != nil { // the read-back burned the live burn pastes
		s.violations.add("after the read-back: %v", err)
	}
	s.checkDatabase(ctx)
	s.checkFailures()
	sum.fsck = s.fsck(ctx)
	return sum
}

// chaos runs the load and the fault controller together until the time or the operation budget
// runs out, then brings every process back up. It returns when the load stopped.
func (s *soak) chaos(ctx context.Context) time.Time {
	stop, cancel := context.WithTimeout(ctx, s.cfg.duration)
	defer cancel()
	l := &load{client: s.client, ledger: s.ledger, pool: newContentPool(rand.New(rand.NewPCG(s.cfg.seed, 1)), 20),
		stats: s.stats, violations: s.violations, clients: s.cfg.clients, maxOps: s.cfg.maxOps, seed: s.cfg.seed}
	f := &faults{c: s.cluster, every: s.cfg.faultEvery, stats: s.stats, logf: s.logf, admin: s.admin, busy: map[*proc]bool{},
		timeline: s.timeline, graceful: s.cfg.haproxy != ""}
	var wg sync.WaitGroup
	wg.Go(func() { f.run(ctx, stop, rand.New(rand.NewPCG(s.cfg.seed, 2))) })
	l.run(ctx, stop)
	loadEnd := time.Now()
	cancel() // the budget may have run out first: the faults stop with the load
	wg.Wait()
	if err := s.cluster.startWithin(ctx, 2*time.Minute, 0); err != nil && ctx.Err() == nil {
		s.violations.add("processes did not come back after the faults: %v", err)
	}
	return loadEnd
}

func (s *soak) logf(format string, args ...any) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	fmt.Fprintf(s.out, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
