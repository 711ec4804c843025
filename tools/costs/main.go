// Command costs measures what one paste costs the deployment (make costs), the numbers behind the
// capacity on paper in docs/scaling.md: bytes per row and per index entry of each table on a loaded
// database (pg_relation_size, pgstattuple), WAL per create, per cleaned paste (with the vacuum that
// follows) and per purged tombstone (pg_current_wal_lsn, split into records and full-page images with
// pg_waldump), and S3 and Redis calls per 1000 expirations. Creates go through the store and the
// bucket as the API makes them; cleanup is the expiry subsystem itself. It runs on the bench
// profile's PostgreSQL, whose settings are durable (fsync, full_page_writes), and prints the costs
// and what they come to at the design notes' scale.
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

	"pastebin/tools/internal/benchdata"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "costs: %v\n", err)
		os.Exit(1)
	}
}

// config is what one measurement does.
type config struct {
	pastes      int     // pastes created, then expired and cleaned
	shared      float64 // fraction of creates that reuse content already stored
	keyed       int     // creates with an Idempotency-Key, measured apart
	concurrency int
	workers     int // cleanup workers
	out         string

	services benchdata.Services
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg := config{services: benchdata.ServicesFromEnv(getenv)}
	fs := flag.NewFlagSet("costs", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.IntVar(&cfg.pastes, "pastes", 50000, "pastes to create, expire and clean")
	fs.Float64Var(&cfg.shared, "shared", 0.4, "fraction of creates that reuse content already stored")
	fs.IntVar(&cfg.keyed, "keyed", 5000, "creates with an Idempotency-Key, measured apart")
	fs.IntVar(&cfg.concurrency, "concurrency", 8, "creates at once")
	fs.IntVar(&cfg.workers, "workers", 2, "cleanup workers")
	fs.StringVar(&cfg.out, "out", "artifacts/costs.txt", "file the report is written to")
	err := fs.Parse(args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil
	case err != nil:
		return err
	case !cfg.services.Complete(false):
		return errors.New("PostgreSQL, Redis and S3 are not configured: run it with `make costs`")
	case cfg.pastes < 1000 || cfg.shared < 0 || cfg.shared >= 1 || cfg.concurrency < 1 || cfg.workers < 1:
		return errors.New("-pastes at least 1000, -shared in [0, 1), -concurrency and -workers at least 1")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	m, err := newMeasurement(ctx, cfg, stdout)
	if err != nil {
		return err
	}
	defer m.close()
	res, err := m.measure(ctx)
	if err != nil {
		return err
	}
	return m.report(res)
}
