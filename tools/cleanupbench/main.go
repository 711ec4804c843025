// Command cleanupbench measures expiry cleanup (make bench-cleanup): on the same expired pastes,
// restored from a template database before each measurement, it times the naive row-by-row loop the
// cleanup seed warns about (a sample, extrapolated), the expiry subsystem end to end (PostgreSQL, S3,
// Redis) with 1, 2 and 4 workers, and the floor: the same database work as a handful of set-based
// statements in one transaction. It prints pastes per second with ratios to the floor and to the
// naive loop, and writes the table to a file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"pastebin/tools/internal/benchdata"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "cleanupbench: %v\n", err)
		os.Exit(1)
	}
}

// config is what one benchmark run measures.
type config struct {
	expired    int     // expired pastes; as many live ones are loaded beside them
	shared     float64 // fraction of pastes reusing content another paste uses
	repeat     int     // measurements of each strategy; the table shows medians
	sample     int     // pastes the naive loop cleans before its rate is extrapolated
	workers    []int
	batchSize  int
	out        string
	only       []string // measure only these strategies: floor, subsystem, naive; empty: all
	cpuProfile string   // where to write a CPU profile of this process
	statements bool     // after each subsystem run, print the costliest statements (pg_stat_statements)
	walRecords bool     // after each measurement, print the WAL it wrote by kind of record (pg_walinspect)

	services benchdata.Services
}

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
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	results, err := b.measureAll(ctx)
	if err != nil {
		return err
	}
	return b.report(results)
}

func parseConfig(args []string, getenv func(string) string, stdout io.Writer) (config, error) {
	cfg := config{services: benchdata.ServicesFromEnv(getenv)}
	fs := flag.NewFlagSet("cleanupbench", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.IntVar(&cfg.expired, "pastes", 200000, "expired pastes to clean (as many live ones are loaded beside them)")
	fs.Float64Var(&cfg.shared, "shared", 0.4, "fraction of pastes that reuse content another paste already uses")
	fs.IntVar(&cfg.repeat, "repeat", 3, "measurements of each strategy; the table shows medians")
	fs.IntVar(&cfg.sample, "naive-sample", 5000, "pastes the naive loop cleans before its rate is extrapolated")
	fs.IntVar(&cfg.batchSize, "batch-size", 1000, "batch size of the subsystem")
	workers := fs.String("workers", "1,2,4", "worker counts to measure the subsystem with")
	fs.StringVar(&cfg.out, "out", "artifacts/bench-cleanup.txt", "file the table is written to")
	only := fs.String("only", "", "measure only these strategies, comma-separated: floor, subsystem, naive")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the benchmark process (the subsystem's Go side) to this file")
	fs.BoolVar(&cfg.statements, "statements", false, "print the costliest statements of each subsystem run (pg_stat_statements)")
	fs.BoolVar(&cfg.walRecords, "wal-records", false, "print the WAL of each measurement by kind of record, full-page images apart (pg_walinspect)")
	if err := fs.Parse(args[1:]); err != nil {
		return cfg, err
	}
	for _, w := range strings.Split(*workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("-workers %q: want numbers such as 1,2,4", *workers)
		}
		cfg.workers = append(cfg.workers, n)
	}
	if !cfg.services.Complete(true) {
		return cfg, errors.New("PostgreSQL, Redis and S3 are not configured: run it with `make bench-cleanup`")
	}
	if cfg.expired < 1000 || cfg.repeat < 1 || cfg.sample < 100 {
		return cfg, errors.New("-pastes must be at least 1000, -repeat at least 1, -naive-sample at least 100")
	}
	if *only != "" {
		cfg.only = strings.Split(*only, ",")
	}
	for _, s := range cfg.only {
		if s != "floor" && s != "subsystem" && s != "naive" {
			return cfg, fmt.Errorf("-only %q: want floor, subsystem or naive, comma-separated", *only)
		}
	}
	cfg.sample = min(cfg.sample, cfg.expired)
	return cfg, nil
}
