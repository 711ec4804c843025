// Command soak is the chaos soak of the hardening issue (make soak). On loopback only, it runs two or
// more `pastebin serve` processes with their cleanup workers, a Redis and an S3 server of its own,
// and a load generator that creates pastes (many sharing the same content) with expiries of
// seconds, reads, burns and deletes them, while a controller SIGKILLs and restarts serve processes
// and stops and restarts Redis and the S3 server. Then it lets everything settle, runs `pastebin
// fsck`, reads back every paste the load created, and prints a summary. Any violation of the
// invariants (docs/design.md, "Invariants") makes it exit non-zero.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		os.Exit(1)
	}
}

// config is what one soak does.
type config struct {
	duration   time.Duration // how long the load and the faults run
	maxOps     int64         // the load also stops after this many operations
	serves     int
	clients    int           // load goroutines
	faultEvery time.Duration // mean pause between two faults
	settle     time.Duration // longest wait for everything to settle at the end
	dir        string        // where the processes' logs go
	pastebin   string        // the pastebin binary under test
	versitygw  string        // the S3 server's binary
	adminURL   string        // PostgreSQL server the soak creates its own database on
	keepDB     bool
	seed       uint64
	// redisCluster runs a three-master Redis Cluster rather than one Redis; the faults stop one
	// master at a time.
	redisCluster bool
	env          childEnv
	haproxy      string // HAProxy's binary: the serve processes run behind it; empty: no balancer
	poolerURL    string // pgbouncer in transaction mode: the serve processes reach PostgreSQL through it
	ports        *portPicker
}

// childEnv is what child processes inherit from the soak's environment: enough to run, and no
// PASTEBIN_ variable that could point them at another test's services.
type childEnv struct{ path, home, tmp string }

// run is the whole program; main only calls it, so the short soak test can too.
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
	s, err := newSoak(ctx, cfg, stdout)
	if err != nil {
		return err
	}
	defer s.close()
	sum := s.soak(ctx)
	sum.print(stdout)
	if n := sum.violations.count(); n > 0 {
		return fmt.Errorf("%d violations; the processes' logs are in %s", n, cfg.dir)
	}
	return ctx.Err()
}

func parseConfig(args []string, getenv func(string) string, stdout io.Writer) (config, error) {
	cfg := config{ports: newPortPicker(),
		adminURL: getenv("PASTEBIN_DATABASE_URL"), versitygw: getenv("PASTEBIN_TEST_VERSITYGW"),
		env: childEnv{path: getenv("PATH"), home: getenv("HOME"), tmp: getenv("TMPDIR")},
	}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.DurationVar(&cfg.duration, "duration", 5*time.Minute, "how long the load and the faults run")
	fs.Int64Var(&cfg.maxOps, "max-ops", 1_000_000, "the load also stops after this many operations")
	fs.IntVar(&cfg.serves, "serves", 2, "pastebin serve processes (at least 2)")
	fs.IntVar(&cfg.clients, "clients", 8, "load generator goroutines")
	fs.DurationVar(&cfg.faultEvery, "fault-every", 3*time.Second, "mean pause between two faults")
	fs.DurationVar(&cfg.settle, "settle-timeout", 3*time.Minute, "longest wait for everything to settle at the end")
	fs.StringVar(&cfg.dir, "dir", "artifacts/soak", "folder for the processes' logs")
	fs.StringVar(&cfg.pastebin, "pastebin", "", "the pastebin binary (make soak builds bin/pastebin)")
	fs.StringVar(&cfg.versitygw, "versitygw", cfg.versitygw, "versitygw binary [PASTEBIN_TEST_VERSITYGW]")
	fs.BoolVar(&cfg.keepDB, "keep-db", false, "keep the soak's database afterwards, for a look at what went wrong")
	redisMode := fs.String("redis", "single", "Redis: single (one server) or cluster (three masters; faults stop one at a time)")
	fs.Uint64Var(&cfg.seed, "seed", uint64(time.Now().UnixNano()), "seed of the load's and the faults' random choices")
	fs.StringVar(&cfg.haproxy, "haproxy", "", "HAProxy binary: run the serve processes behind it, health-checked on /readyz, and restart some gracefully (make soak LB=haproxy)")
	pooled := fs.Bool("pooled", false, "the serve processes reach PostgreSQL through pgbouncer in transaction mode [PASTEBIN_TEST_POOLER_URL]")
	if err := fs.Parse(args[1:]); err != nil {
		return cfg, err
	}
	cfg.redisCluster = *redisMode == "cluster"
	if *pooled {
		if cfg.poolerURL = getenv("PASTEBIN_TEST_POOLER_URL"); cfg.poolerURL == "" {
			return cfg, errors.New("-pooled: PASTEBIN_TEST_POOLER_URL is not set: run it with `make soak`")
		}
	}
	switch {
	case *redisMode != "single" && *redisMode != "cluster":
		return cfg, errors.New(`-redis must be "single" or "cluster"`)
	case cfg.adminURL == "" || cfg.versitygw == "":
		return cfg, errors.New("PASTEBIN_DATABASE_URL or PASTEBIN_TEST_VERSITYGW is not set: run it with `make soak`")
	case cfg.pastebin == "":
		return cfg, errors.New("-pastebin is required: the binary under test (make soak builds it)")
	case cfg.serves < 2 || cfg.clients < 1 || cfg.maxOps < 1:
		return cfg, errors.New("-serves must be at least 2, -clients and -max-ops at least 1")
	case cfg.duration <= 0 || cfg.faultEvery <= 0 || cfg.settle <= 0:
		return cfg, errors.New("-duration, -fault-every and -settle-timeout must be positive")
	}
	return cfg, nil
}
