// Command heavyday measures the heavy day of the design notes (make bench-heavyday): millions of
// pastes expiring together in a table twice their size, drained by two `pastebin serve` replicas
// through POST /admin/cleanup while an open-loop foreground load keeps reading, creating and
// deleting. On the same data, restored before each phase, it measures the set-based floor, a drain
// at full speed with nobody else on the database, the plant the pacing steers (the users' latency
// at fixed budgets: the steps, each a minute from the same backlog), the foreground load alone (the
// baseline) and a window of the automatically paced drain under that load. It writes a report and
// plots to artifacts/heavyday/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"pastebin/tools/internal/benchdata"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "heavyday: %v\n", err)
		os.Exit(1)
	}
}

// config is what one heavy-day run measures.
type config struct {
	expired    int     // expired pastes; -live live ones beside them
	live       int     // live pastes
	shared     float64 // fraction of pastes that reuse content another paste uses
	realBlobs  int     // freed content whose blobs really exist in S3, in the order the drain frees them
	liveSample int     // live pastes whose blobs exist, for the foreground load's uncached reads
	phases     []string
	replicas   int
	workers    int           // cleanup workers per replica
	batchSize  int           // PASTEBIN_CLEANUP_BATCH_SIZE
	rate       int           // foreground requests per second, over all replicas
	baseline   time.Duration // the foreground load alone; as long as the paced window
	window     time.Duration // the paced drain under load is measured this long (or until it ends)
	steps      []stepSpec    // the steps' budgets, and any batch size of their own
	stepLength time.Duration
	stepWarmup time.Duration // the load alone, unmeasured, before each step: the replicas just started
	stepSettle time.Duration // each step's drain, unmeasured, before its measurement: the drain just started
	budget     float64       // PASTEBIN_CLEANUP_LATENCY_BUDGET, and what the report holds the users to
	pacing     string        // PASTEBIN_CLEANUP_PACING of the drain under load
	maxRate    string        // PASTEBIN_CLEANUP_MAX_RATE of the drain under load, the deployment's
	walBudget  string        // max_wal_size during the run: the disk WAL may take
	out        string
	args       []string // as given, for the report to say how it was run
	pastebin   string   // the serve binary

	services benchdata.Services
}

// The phases, in the order they run.
const (
	phaseFloor   = "floor"   // the set-based floor: one transaction, no S3 or Redis
	phaseUnpaced = "unpaced" // the replicas drain with pacing off and no foreground load
	phaseSteps   = "steps"   // the plant: the drain at fixed budgets under the foreground load
	phaseHeavy   = "heavy"   // the baseline load, then the drain (paced as -pacing says) under it
	// phaseReplay runs the paced window's settled rate again as a step. The steps and the window,
	// each after minutes of the load alone on the same data, have disagreed by more than the
	// budget's width, both ways (docs/performance.md, runs E, I and J): a replay that reads what the
	// window read says the day moved under the steps; one that reads what the front reads there
	// says the window's own drain cost the users more than a steady one.
	phaseReplay = "replay"
)

var allPhases = []string{phaseFloor, phaseUnpaced, phaseSteps, phaseHeavy, phaseReplay}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := parseConfig(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := newBench(ctx, cfg, stdout)
	if err != nil {
		return err
	}
	defer b.close()
	_, err = b.measure(ctx)
	return err
}

func parseConfig(args []string, getenv func(string) string, stdout io.Writer) (config, error) {
	cfg := config{services: benchdata.ServicesFromEnv(getenv)}
	fs := flag.NewFlagSet("heavyday", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.IntVar(&cfg.expired, "pastes", 10_000_000, "expired pastes the drain clears")
	fs.IntVar(&cfg.live, "live", 0, "live pastes beside them (default: as many as -pastes)")
	fs.Float64Var(&cfg.shared, "shared", 0.4, "fraction of pastes that reuse content another paste uses")
	fs.IntVar(&cfg.realBlobs, "real-blobs", 1_000_000, "freed content whose blobs exist in S3 (the first the drain frees); the rest are keys S3 no longer has")
	fs.IntVar(&cfg.liveSample, "live-sample", 50_000, "live pastes whose blobs exist, read once each by the load (uncached reads)")
	phases := fs.String("phases", strings.Join(allPhases, ","), "what to measure: floor, unpaced, steps, heavy, replay (after heavy)")
	fs.IntVar(&cfg.replicas, "replicas", 2, "pastebin serve replicas")
	fs.IntVar(&cfg.workers, "workers", 1, "cleanup workers per replica (docs/scaling.md: about one per PostgreSQL core in all)")
	fs.IntVar(&cfg.batchSize, "batch-size", 1000, "PASTEBIN_CLEANUP_BATCH_SIZE of the replicas")
	fs.IntVar(&cfg.rate, "rate", 300, "foreground requests per second, over all replicas")
	fs.DurationVar(&cfg.window, "window", 0, "length of the paced drain's window under load (default: 10 minutes per 10 million pastes, at least 2 minutes)")
	fs.DurationVar(&cfg.baseline, "baseline", 0, "length of the baseline load (default: the window's)")
	steps := fs.String("steps", "250,1000,2000,3000,4000,0", "budgets of the steps, pastes/s for the deployment (0: none); 250@100: that budget in batches of 100, beside the front (the front is the steps at -batch-size)")
	fs.DurationVar(&cfg.stepLength, "step-length", time.Minute, "how long each step is measured")
	fs.DurationVar(&cfg.stepSettle, "step-settle", -1, "how long each step's drain runs before it is measured, at most until half the backlog is gone (default: 1 minute per 10 million pastes, at least 20s; 0: none)")
	fs.DurationVar(&cfg.stepWarmup, "step-warmup", 0, "how long each step runs the foreground load before the drain starts and the measurement with it (default: 3 minutes per 10 million pastes, at least 20s)")
	fs.Float64Var(&cfg.budget, "latency-budget", 1.5, "PASTEBIN_CLEANUP_LATENCY_BUDGET of the drain under load, and the users' p99 the report holds the steps and the window to")
	fs.StringVar(&cfg.pacing, "pacing", "auto", "PASTEBIN_CLEANUP_PACING of the drain under load: auto or off")
	fs.StringVar(&cfg.maxRate, "max-rate", "", "PASTEBIN_CLEANUP_MAX_RATE of the drain under load (pastes/s, the deployment's); empty: none")
	fs.StringVar(&cfg.walBudget, "wal-budget", "4GB", "max_wal_size while the benchmark runs (the WAL's disk)")
	fs.StringVar(&cfg.out, "out", "artifacts/heavyday", "folder the report, the plot and the replicas' logs go to")
	fs.StringVar(&cfg.pastebin, "pastebin", "bin/pastebin", "the pastebin binary the replicas run")
	if err := fs.Parse(args[1:]); err != nil {
		return cfg, err
	}
	cfg.args = args[1:]
	if cfg.live == 0 {
		cfg.live = cfg.expired
	}
	if cfg.window == 0 {
		cfg.window = perTenMillion(10*time.Minute, 2*time.Minute, cfg.expired)
	}
	if cfg.baseline == 0 {
		cfg.baseline = cfg.window
	}
	if cfg.stepWarmup == 0 {
		cfg.stepWarmup = defaultStepWarmup(cfg.expired)
	}
	if cfg.stepSettle < 0 {
		cfg.stepSettle = defaultStepSettle(cfg.expired)
	}
	for _, s := range strings.Split(*steps, ",") {
		spec, err := parseStep(s, cfg.batchSize)
		if err != nil {
			return cfg, fmt.Errorf("-steps %q: %w", *steps, err)
		}
		cfg.steps = append(cfg.steps, spec)
	}
	cfg.phases = strings.Split(*phases, ",")
	for _, p := range cfg.phases {
		if !slices.Contains(allPhases, p) {
			return cfg, fmt.Errorf("-phases: %q is not one of %s", p, strings.Join(allPhases, ", "))
		}
	}
	switch {
	case !cfg.services.Complete(true):
		return cfg, errors.New("PostgreSQL, Redis and S3 are not configured: run it with `make bench-heavyday`")
	case cfg.expired < 10_000 || cfg.live < 10_000:
		return cfg, errors.New("-pastes and -live must be at least 10000")
	case cfg.replicas < 1 || cfg.workers < 1 || cfg.rate < 10:
		return cfg, errors.New("-replicas and -workers must be at least 1, -rate at least 10")
	case cfg.pacing != "auto" && cfg.pacing != "off":
		return cfg, fmt.Errorf("-pacing %q: want auto or off", cfg.pacing)
	}
	cfg.liveSample = min(cfg.liveSample, cfg.live/2)
	return cfg, nil
}

// perTenMillion is d at ten million pastes, in proportion to pastes, and at least least: the
// defaults of what a run's size stretches.
func perTenMillion(d, least time.Duration, pastes int) time.Duration {
	return max(least, time.Duration(float64(d)*float64(pastes)/10e6).Round(time.Second))
}
