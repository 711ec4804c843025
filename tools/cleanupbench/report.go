package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// report prints the table of medians with their ratios to the floor and to the naive loop, and
// writes it to cfg.out.
func (b *bench) report(results []result) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "cleanup benchmark, %s, %d cores: %d expired pastes among %d, %.0f%% of pastes sharing content\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), b.cfg.expired, 2*b.cfg.expired, b.cfg.shared*100)
	fmt.Fprintf(&buf, "medians of %d measurement(s) each, interleaved, each on a fresh copy of the same data; load average at the end %s\n", b.cfg.repeat, loadAverage())
	fmt.Fprintf(&buf, "WAL: bytes the server wrote per cleaned paste; CPU: PostgreSQL's processor time per cleaned paste (every process of the server)\n\n")
	floor, naive := results[0], results[len(results)-1] // NaN ratios where either was not measured
	if !strings.HasPrefix(floor.name, "floor") {
		floor = result{}
	}
	if !strings.HasPrefix(naive.name, "naive") {
		naive = result{}
	}
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tpastes/s\tvs floor\tvs naive\tWAL B\tvs floor\tCPU µs\tvs floor\tdeadlocks\truns (pastes/s)\t")
	for _, r := range results {
		name := r.name
		if r.note != "" {
			name += " (" + r.note + ")"
		}
		wal, cpu := median(r.wal), median(r.cpu)
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", name, r.median(), ratio(r.median(), floor.median(), ""),
			ratio(r.median(), naive.median(), "×"), number(wal, 0), ratio(wal, median(floor.wal), ""), number(cpu, 1),
			ratio(cpu, median(floor.cpu), ""), r.deadlocks, formatRates(r.rates))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprint(b.out, "\n"+buf.String())
	if err := os.MkdirAll(filepath.Dir(b.cfg.out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(b.cfg.out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "\nwritten to %s\n", b.cfg.out)
	return nil
}

func formatRates(rates []float64) string {
	s := make([]string, len(rates))
	for i, r := range rates {
		s[i] = fmt.Sprintf("%.0f", r)
	}
	return strings.Join(s, " ")
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

// ratio writes a/b with two decimals (and a unit), or a dash where either was not measured.
func ratio(a, b float64, unit string) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "–"
	}
	if unit != "" {
		return fmt.Sprintf("%.1f%s", a/b, unit)
	}
	return fmt.Sprintf("%.2f", a/b)
}

func number(v float64, decimals int) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}
