package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// The design notes' scale.
const (
	scalePastes    = 3.65e9 // pastes stored (ten years of a million a day)
	scaleDaily     = 1e6    // created and expired on an ordinary day
	scaleHeavy     = 10e6   // expired on a heavy day (a cohort of 30-day pastes)
	tombstoneDays  = 30     // PASTEBIN_TOMBSTONE_RETENTION: tombstones kept
	idempotencyDay = 1      // Idempotency-Key records are kept a day
	pageBytes      = 8192
)

// report prints the measured costs and what they come to at the design notes' scale, and writes
// them to cfg.out.
func (m *measurement) report(r result) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "costs per paste, %s, %d cores (a machine shared with other work): %d creates (%.0f%% on stored content) and %d with an Idempotency-Key, cleaned by %d workers\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), r.creates, m.cfg.shared*100, r.keyed, m.cfg.workers)
	writeSizes(&b, r)
	writeOperations(&b, r)
	writeScale(&b, r)
	fmt.Fprint(m.out, "\n"+b.String())
	if err := os.MkdirAll(filepath.Dir(m.cfg.out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(m.cfg.out, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(m.out, "\nwritten to %s\n", m.cfg.out)
	return nil
}

func writeSizes(w io.Writer, r result) {
	fmt.Fprintln(w, "\nbytes on disk per row and per index entry (pg_relation_size / rows or entries; a table's own row versions by pgstattuple):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "relation\tevery paste live: bytes\tentries\tper entry\trow alone\tall tombstones: bytes\tentries\tper entry\t")
	for i, l := range r.live {
		t := r.tombstones[i]
		name, alone := l.name, ""
		if l.index {
			name = "  " + name
		} else if l.entries > 0 {
			alone = fmt.Sprintf("%.0f", float64(l.tupleBytes)/float64(l.entries))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%s\t%d\t%d\t%.1f\t\n", name, l.bytes, l.entries, l.perEntry(), alone, t.bytes, t.entries, t.perEntry())
	}
	tw.Flush()
}

func writeOperations(w io.Writer, r result) {
	fmt.Fprintln(w, "\nWAL per operation, each phase from a checkpoint (so every page's first change writes a full-page image):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tWAL bytes/op\tof which full pages\trecords alone\trecords/op\tfull pages/op\t")
	n := float64(r.cleaned)
	for _, op := range []struct {
		name string
		c    walCost
		per  float64
	}{
		{"create", r.createWAL, float64(r.creates)}, {"create with an Idempotency-Key", r.keyedWAL, float64(r.keyed)},
		{"cleanup of an expired paste", r.cleanWAL, n}, {"vacuum after cleanup, per cleaned paste", r.vacuumWAL, n},
		{"purge of a tombstone", r.purgeWAL, float64(r.purged)},
	} {
		fpi := "?"
		if op.c.fpiBytes >= 0 {
			fpi = fmt.Sprintf("%.0f", float64(op.c.fpiBytes)/op.per)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.0f\t%.1f\t%.2f\t\n", op.name, float64(op.c.bytes)/op.per, fpi,
			recordBytes(op.c)/op.per, float64(op.c.records)/op.per, float64(op.c.fpis)/op.per)
	}
	tw.Flush()
	fmt.Fprintf(w, "\ncleanup: %d pastes in %s with %d workers (%.0f pastes/s); %d content rows for %d pastes\n",
		r.cleaned, r.cleanTime.Round(time.Millisecond), r.workers, n/r.cleanTime.Seconds(), r.contentRows, r.creates+r.keyed)
	fmt.Fprintf(w, "S3 calls per 1000 creates: %s\n", perThousand(r.createS3, float64(r.creates)))
	fmt.Fprintf(w, "S3 calls per 1000 expirations: %s\n", perThousand(r.cleanS3, n))
	fmt.Fprintf(w, "Redis per 1000 expirations: %s\n", perThousand(r.cleanRedis, n))
}

// recordBytes is the WAL without its full-page images: what the operation costs once its pages are
// in the WAL since the last checkpoint. Without pg_waldump, all of it.
func recordBytes(c walCost) float64 {
	if c.fpiBytes < 0 {
		return float64(c.bytes)
	}
	return float64(c.bytes - c.fpiBytes)
}

func perThousand(calls map[string]int64, ops float64) string {
	var parts []string
	for name, n := range calls {
		parts = append(parts, fmt.Sprintf("%s %.1f", name, float64(n)*1000/ops))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
