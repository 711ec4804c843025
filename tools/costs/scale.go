package main

import (
	"fmt"
	"io"
)

// sum is the bytes of table and its indexes, and its rows.
func sum(rels []relSize, table string) (bytes int64, rows int64) {
	for _, r := range rels {
		if r.table == table {
			bytes += r.bytes
			if !r.index {
				rows = r.entries
			}
		}
	}
	return bytes, rows
}

func find(rels []relSize, name string) relSize {
	for _, r := range rels {
		if r.name == name {
			return r
		}
	}
	return relSize{}
}

// perRow is the bytes per row of table with all its indexes.
func perRow(rels []relSize, table string) float64 {
	b, n := sum(rels, table)
	if n == 0 {
		return 0
	}
	return float64(b) / float64(n)
}

// tombstoneBytes is what a tombstone costs at scale: its row in tombstones (with its line pointer,
// in pages as full as the table's rows leave them), its primary key entry and its purge index entry.
func tombstoneBytes(r result) float64 {
	heap := find(r.tombstones, "tombstones")
	row := float64(heap.tupleBytes)/float64(heap.entries) + 4
	fill := float64(heap.tupleBytes+4*heap.entries) / float64(heap.bytes)
	return row/fill + find(r.tombstones, "tombstones_pkey").perEntry() + find(r.tombstones, "idx_tombstones_deleted_at").perEntry()
}

// writeScale prints what the measured costs come to at the design notes' scale.
func writeScale(w io.Writer, r result) {
	shared := 1 - float64(r.contentRows)/float64(r.creates+r.keyed)
	paste, content, key := perRow(r.live, "pastes"), perRow(r.live, "content"), perRow(r.live, "idempotency_keys")
	tomb := tombstoneBytes(r)
	db := scalePastes*(paste+(1-shared)*content) + tombstoneDays*scaleDaily*tomb + idempotencyDay*scaleDaily*key
	fmt.Fprintf(w, "\nat the design notes' scale (%.2g pastes stored, %.0g created and expired a day, %.0g expired on a heavy day), %.0f%% of creates on stored content:\n",
		scalePastes, scaleDaily, scaleHeavy, shared*100)
	fmt.Fprintf(w, "  database: %.0f bytes per live paste (row and indexes) + %.0f per content row x %.2f content rows per paste = %s for the pastes;\n",
		paste, content, 1-shared, human(scalePastes*(paste+(1-shared)*content)))
	fmt.Fprintf(w, "    + %d days of tombstones at %.0f bytes (%s) + a day of Idempotency-Key records at %.0f bytes (%s): about %s in all\n",
		tombstoneDays, tomb, human(tombstoneDays*scaleDaily*tomb), key, human(idempotencyDay*scaleDaily*key), human(db))
	writeWALScale(w, r, shared)
	n := float64(r.cleaned)
	rate := n / r.cleanTime.Seconds()
	fmt.Fprintf(w, "  S3: %s objects (one per content row); a day: %s PutObject, %.0f DeleteObjects (%.0f on a heavy day)\n",
		human1(scalePastes*(1-shared)), human1(scaleDaily*float64(r.createS3["PutObject"])/float64(r.creates)),
		scaleDaily*float64(r.cleanS3["DeleteObjects"])/n, scaleHeavy*float64(r.cleanS3["DeleteObjects"])/n)
	fmt.Fprintf(w, "  cleanup of a heavy day: %.1f h with %d workers at the %.0f pastes/s measured here, %.1f worker-hours\n",
		scaleHeavy/rate/3600, r.workers, rate, scaleHeavy/rate/3600*float64(r.workers))
}

// writeWALScale prints the WAL of a day three ways: as measured here (from a checkpoint, on tables
// small enough that their pages soon are all in the WAL), records alone (the floor), and records
// plus one full 8 KiB page for each page in random key order an operation touches (the ceiling on
// tables far larger than what a checkpoint interval touches): a create touches the leaves of
// pastes_pkey and idx_pastes_content_hash, and of content_pkey and the blob key's index for new
// content, or the content row's page for stored content; a cleanup the pastes_pkey leaf and the
// content row's page; a purge the tombstones_pkey leaf its vacuum cleans.
func writeWALScale(w io.Writer, r result, shared float64) {
	type op struct {
		c     walCost
		n     float64
		pages float64
	}
	n := float64(r.cleaned)
	create := op{r.createWAL, float64(r.creates), 2 + 2*(1-shared) + shared}
	clean := op{r.cleanWAL, n, 2}
	vacuum := op{r.vacuumWAL, n, 0}
	purge := op{r.purgeWAL, float64(r.purged), 1}
	day := func(ops []op, counts []float64, f func(op) float64) float64 {
		t := 0.0
		for i, o := range ops {
			t += counts[i] * f(o)
		}
		return t
	}
	measured := func(o op) float64 { return float64(o.c.bytes) / o.n }
	floor := func(o op) float64 { return recordBytes(o.c) / o.n }
	ceiling := func(o op) float64 { return floor(o) + o.pages*pageBytes }
	ops := []op{create, clean, vacuum, purge}
	for _, d := range []struct {
		name   string
		counts []float64
	}{
		{"an ordinary day", []float64{scaleDaily, scaleDaily, scaleDaily, scaleDaily}},
		{"a heavy day", []float64{scaleDaily, scaleHeavy, scaleHeavy, scaleDaily}},
	} {
		fmt.Fprintf(w, "  WAL on %s: %s as measured here, %s records alone, %s with a full page per page in random key order\n",
			d.name, human(day(ops, d.counts, measured)), human(day(ops, d.counts, floor)), human(day(ops, d.counts, ceiling)))
	}
}

func human(b float64) string {
	for _, u := range []struct {
		name string
		size float64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b >= u.size {
			return fmt.Sprintf("%.1f %s", b/u.size, u.name)
		}
	}
	return fmt.Sprintf("%.0f B", b)
}

func human1(n float64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f billion", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f million", n/1e6)
	}
	return fmt.Sprintf("%.0f", n)
}
