package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/term"

	"pastebin/store"
)

// runCleanup runs one cleanup from the command line and prints its report; with --dry-run it only
// prints the backlog.
func runCleanup(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var conn connConfig
	var exp expiryConfig
	var dryRun, asJSON bool
	fs := newFlagSet("cleanup", "Runs one cleanup now, with the workers of -cleanup-workers, and prints its report.", stdout)
	conn.register(fs)
	exp.register(fs)
	fs.BoolVar(&dryRun, "dry-run", false, "print the backlog and change nothing")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if dryRun {
		return printDryRun(ctx, &conn, stdout, asJSON)
	}
	svc, logger, err := openForCommand(ctx, &conn, stdout)
	if err != nil {
		return err
	}
	defer svc.close()
	backlog, err := svc.store.Backlog(ctx)
	if err != nil {
		return err
	}
	if exp.workers == 0 {
		exp.workers = 1
	}
	exp.warnPacing(logger)
	x, err := exp.newExpirer(svc, nil, logger, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	set, done := newProgress(stdout, progressSpec{total: backlog.Expired, bar: "cleaning expired pastes", unit: "pastes",
		event: "cleanup progress", key: "tombstoned", note: "pacing"}, logger)
	run, err := x.RunOnce(ctx, "cli", func(st store.RunState) {
		set(st.Tombstoned, "blobs_deleted", st.BlobsDeleted, "pacing", st.Pacing.String())
	})
	done()
	if err != nil {
		return err
	}
	return printRun(stdout, run, asJSON)
}

// openForCommand opens the services for a one-shot command, logging only warnings on a terminal so
// the progress bar stays readable.
func openForCommand(ctx context.Context, conn *connConfig, stdout io.Writer) (*services, *slog.Logger, error) {
	if isTerminal(stdout) && conn.logLevel == "info" {
		conn.logLevel = "warn"
	}
	logger, err := conn.newLogger(stdout)
	if err != nil {
		return nil, nil, err
	}
	svc, err := conn.open(ctx, logger)
	return svc, logger, err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// printDryRun prints the backlog, which needs the database alone.
func printDryRun(ctx context.Context, conn *connConfig, stdout io.Writer, asJSON bool) error {
	logger, err := conn.newLogger(stdout)
	if err != nil {
		return err
	}
	st, err := conn.openStore(ctx, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	b, err := st.Backlog(ctx)
	if err != nil {
		return err
	}
	return printBacklog(stdout, b, asJSON)
}

func printBacklog(w io.Writer, b store.Backlog, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(b)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "expired, not cleaned\t%d\n", b.Expired)
	if !b.Oldest.IsZero() {
		fmt.Fprintf(tw, "oldest expired\t%s (%s ago)\n", b.Oldest.UTC().Format(time.RFC3339), time.Since(b.Oldest).Round(time.Second))
	}
	fmt.Fprintf(tw, "claimed, in progress\t%d\n", b.InProgress)
	fmt.Fprintf(tw, "blobs in the outbox\t%d\n", b.Outbox)
	return tw.Flush()
}

func printRun(w io.Writer, r store.Run, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%d (%s, %s)\n", r.ID, r.Trigger, r.Status)
	fmt.Fprintf(tw, "started\t%s\n", r.StartedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(tw, "duration\t%s\n", time.Duration(r.Duration*float64(time.Second)).Round(time.Millisecond))
	fmt.Fprintf(tw, "workers\t%d\n", r.Workers)
	for _, row := range []struct {
		name string
		n    int64
	}{{"stuck claims reset", r.ResetStuck}, {"claimed", r.Claimed}, {"tombstoned", r.Tombstoned},
		{"content rows freed", r.ContentFreed}, {"blobs deleted", r.BlobsDeleted}, {"blob deletes failed", r.BlobsFailed},
		{"tombstones purged", r.Purged}, {"batches", r.Batches}, {"batches retried", r.BatchesRetried},
		{"ref_counts repaired", r.ContentRepaired}, {"errors", r.Errors}} {
		fmt.Fprintf(tw, "%s\t%d\n", row.name, row.n)
	}
	if r.ContentRepaired > 0 {
		fmt.Fprintf(tw, "repaired content\t%s\n", joinHashes(r.RepairedHashes))
	}
	fmt.Fprintf(tw, "pacing\t%s, waited %s\n", r.Pacing.String(),
		time.Duration(r.Pacing.WaitedSeconds*float64(time.Second)).Round(time.Millisecond))
	if r.LastError != "" {
		fmt.Fprintf(tw, "last error\t%s\n", r.LastError)
	}
	if r.Duration > 0 {
		fmt.Fprintf(tw, "rate\t%.0f pastes/s\n", float64(r.Tombstoned)/r.Duration)
	}
	return tw.Flush()
}

// runSweep runs the orphan sweeper once and prints what it found.
func runSweep(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var conn connConfig
	var exp expiryConfig
	fs := newFlagSet("sweep", "Lists the bucket's blobs, deletes those nothing names that are older than -orphan-grace, and reports.", stdout)
	conn.register(fs)
	exp.register(fs)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	svc, logger, err := openForCommand(ctx, &conn, stdout)
	if err != nil {
		return err
	}
	defer svc.close()
	x, err := exp.newExpirer(svc, nil, logger, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	rep, err := x.Sweep(ctx)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(rep)
}

func joinHashes(hs []store.HexHash) string {
	s := make([]string, len(hs))
	for i, h := range hs {
		s[i] = h.String()
	}
	return strings.Join(s, " ")
}
