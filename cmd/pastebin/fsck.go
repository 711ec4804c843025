package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"pastebin/expiry"
)

// fsckConfig is what fsck is asked to do beyond where the services are.
type fsckConfig struct {
	exp          expiryConfig // its orphan grace only: the same as the sweeper's
	outboxMaxAge duration
	repair       bool
	asJSON       bool
}

func (fc *fsckConfig) register(fs *flag.FlagSet) {
	fc.exp.registerOrphanGrace(fs)
	fc.outboxMaxAge = duration(time.Hour)
	fs.Var(&fc.outboxMaxAge, "outbox-max-age", "an outbox entry older than this is a problem: the outbox does not drain")
	fs.BoolVar(&fc.repair, "repair", false, "fix wrong ref_counts and queue orphan blobs for deletion")
	fs.BoolVar(&fc.asJSON, "json", false, "print the report as one JSON object (and log only errors)")
}

const fsckSummary = `Checks invariants 1-3 (docs/design.md, "Invariants") against a live deployment, without stopping it:
ref_count against the pastes, every content blob in S3, orphan blobs older than -orphan-grace,
and the outbox's age. Exits non-zero when something is wrong and was not repaired.
With -repair, recounts wrong ref_counts under their row locks and queues orphan blobs for the
blob deleter; a missing blob cannot be repaired and is only reported.`

// runFsck checks the deployment, repairs with -repair, and prints the report. It returns an error
// when a problem is left, so the process exits non-zero.
func runFsck(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var conn connConfig
	var fc fsckConfig
	fs := newFlagSet("fsck", fsckSummary, stdout)
	conn.register(fs)
	fc.register(fs)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if fc.asJSON && conn.logLevel == "info" {
		conn.logLevel = "error" // stdout is the report's, which says all a warning would
	}
	svc, logger, err := openForCommand(ctx, &conn, stdout)
	if err != nil {
		return err
	}
	defer svc.close()
	cfg := expiry.CheckConfig{OrphanGrace: time.Duration(fc.exp.orphanGrace), OutboxMaxAge: time.Duration(fc.outboxMaxAge), Repair: fc.repair}
	bar := &fsckBar{stdout: stdout, logger: logger}
	if !fc.asJSON { // stdout is the report's alone
		cfg.Progress = bar.report
	}
	rep, err := expiry.NewChecker(cfg, svc.store, svc.bucket, logger).Check(ctx)
	bar.finish()
	if err != nil {
		return fmt.Errorf("fsck: %w", err)
	}
	if err := printFsck(stdout, rep, fc.asJSON); err != nil {
		return err
	}
	if !rep.OK {
		return fmt.Errorf("fsck: %s", strings.Join(rep.Problems, "; "))
	}
	return nil
}

// fsckBar shows the blob check's progress. Its total is found by the ref_count check, which runs
// first, so the bar starts on the first report.
type fsckBar struct {
	stdout io.Writer
	logger *slog.Logger
	set    func(int64, ...any)
	done   func()
}

func (b *fsckBar) report(checked, total int64) {
	if b.set == nil {
		b.set, b.done = newProgress(b.stdout, progressSpec{total: total, bar: "checking blobs", unit: "content rows",
			event: "fsck progress", key: "content_checked"}, b.logger)
	}
	b.set(checked)
}

func (b *fsckBar) finish() {
	if b.done != nil {
		b.done()
	}
}

func printFsck(w io.Writer, r expiry.CheckReport, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "checked\t%d pastes, %d content rows, %d blobs in %s\n", r.Pastes, r.Content, r.Blobs.Listed,
		time.Duration(r.Seconds*float64(time.Second)).Round(time.Millisecond))
	printRefFindings(tw, r.Refs, r.Repair)
	printBlobFindings(tw, r.Blobs, r.Repair)
	fmt.Fprintf(tw, "outbox\t%d blobs, oldest %s, %d retrying, %d abandoned uploads held for the grace period\n", r.Outbox.Size,
		time.Duration(r.Outbox.OldestAge*float64(time.Second)).Round(time.Second), r.Outbox.Retrying, r.Outbox.Held)
	for _, e := range r.Outbox.Struggling[:min(len(r.Outbox.Struggling), 5)] {
		fmt.Fprintf(tw, "\t  %s: %d attempts, %s\n", e.BlobKey, e.Attempts, e.LastError)
	}
	for _, p := range r.Warnings {
		fmt.Fprintf(tw, "warning\t%s\n", p)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(tw, "PROBLEM\t%s\n", p)
	}
	if r.OK {
		fmt.Fprintf(tw, "result\tOK\n")
	}
	return tw.Flush()
}

func printRefFindings(w io.Writer, f expiry.RefFindings, repair bool) {
	fmt.Fprintf(w, "wrong ref_count\t%d\n", f.Wrong)
	fmt.Fprintf(w, "content at ref_count 0\t%d\n", f.Unreferenced)
	for _, a := range f.Examples[:min(len(f.Examples), 5)] {
		fmt.Fprintf(w, "\t  %s: ref_count %d, pastes %d\n", a.Hash, a.RefCount, a.Pastes)
	}
	if repair {
		fmt.Fprintf(w, "ref_counts repaired\t%d (%d right again when locked)\n", len(f.Repaired), f.Settled)
		for _, r := range f.Repaired[:min(len(f.Repaired), 5)] {
			freed := ""
			if r.Freed {
				freed = " (no paste left: row deleted, blob queued)"
			}
			fmt.Fprintf(w, "\t  %s: %d -> %d%s\n", r.Hash, r.Was, r.Now, freed)
		}
	}
	fmt.Fprintf(w, "live pastes without content\t%d\n", f.LiveWithoutContent)
}

func printBlobFindings(w io.Writer, b expiry.BlobFindings, repair bool) {
	fmt.Fprintf(w, "blobs missing from S3\t%d (%d live pastes)\n", b.Missing, b.MissingPastes)
	for _, o := range b.MissingBlobs[:min(len(b.MissingBlobs), 5)] {
		fmt.Fprintf(w, "\t  %s: ref_count %d, %d live pastes %v\n", o.BlobKey, o.RefCount, o.Live, o.Pastes)
	}
	fmt.Fprintf(w, "orphan blobs\t%d (%d bytes)\n", b.Orphans, b.OrphanBytes)
	for _, k := range b.OrphanKeys[:min(len(b.OrphanKeys), 5)] {
		fmt.Fprintf(w, "\t  %s\n", k)
	}
	if repair {
		fmt.Fprintf(w, "orphans queued for deletion\t%d\n", b.Queued)
	}
	fmt.Fprintf(w, "uploads in flight\t%d\n", b.InFlight)
	fmt.Fprintf(w, "suspects cleared on a second look\t%d\n", b.Cleared)
}
