package main

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// loadStats sums up outcomes of the foreground load.
type loadStats struct {
	requests, errors int
	seconds          float64
	p50, p99, max    time.Duration
}

func statsOf(outs []outcome) loadStats {
	s := loadStats{requests: len(outs)}
	if len(outs) == 0 {
		return s
	}
	lat := make([]time.Duration, len(outs))
	first, last := outs[0].at, outs[0].at
	for i, o := range outs {
		lat[i] = o.latency
		if !o.ok {
			s.errors++
		}
		first, last = minTime(first, o.at), maxTime(last, o.at)
	}
	slices.Sort(lat)
	s.p50, s.p99, s.max = percentile(lat, 0.50), percentile(lat, 0.99), lat[len(lat)-1]
	s.seconds = last.Sub(first).Seconds()
	return s
}

// byKind splits outcomes by the kind of request, in the mix's order.
func byKind(outs []outcome) ([]string, map[string][]outcome) {
	m := map[string][]outcome{}
	for _, o := range outs {
		m[o.kind] = append(m[o.kind], o)
	}
	var kinds []string
	for _, k := range mix {
		if len(m[k.kind]) > 0 {
			kinds = append(kinds, k.kind)
		}
	}
	return kinds, m
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// tenth is one tenth of a drain's pastes: how long it took and what its batches cost.
type tenth struct {
	seconds       float64
	pastes        float64
	claim, finish histogram
	rateLimit     float64 // the pacers' limit at its end, summed over the replicas; 0: none
}

// tenths splits a drain at every tenth of its pastes, by the metrics scraped every second.
func tenths(d *drainResult) []tenth {
	var out []tenth
	from := 0
	for k := 1; k <= 10 && from < len(d.samples)-1; k++ {
		target := float64(d.pastes) * float64(k) / 10
		to := from + 1
		for to < len(d.samples)-1 && d.samples[to].tombstoned < target {
			to++
		}
		a, z := d.samples[from], d.samples[to]
		if z.tombstoned == a.tombstoned {
			break // a drain shorter than ten scrapes
		}
		out = append(out, tenth{seconds: z.at.Sub(a.at).Seconds(), pastes: z.tombstoned - a.tombstoned,
			claim: z.claim.minus(a.claim), finish: z.finish.minus(a.finish), rateLimit: z.rateLimit})
		from = to
	}
	return out
}

// s3Split returns the DeleteObjects latencies of the drain's batches whose freed blobs really
// existed in S3 (the first freed content), and of those whose keys S3 no longer had, leaving out
// the few seconds around the change, when both kinds of batch ran.
func (b *bench) s3Split(d *drainResult) (real, absent histogram) {
	margin := float64(3 * b.cfg.replicas * b.cfg.workers * 1000) // batches in flight at once
	last := len(d.samples) - 1
	realEnd, absentStart := 0, last
	for i, s := range d.samples {
		if s.tombstoned <= float64(b.meta.RealPastes)-margin {
			realEnd = i
		}
		if s.tombstoned >= float64(b.meta.RealPastes)+margin && absentStart == last {
			absentStart = i
		}
	}
	real = d.samples[realEnd].s3.minus(d.samples[0].s3)
	if absentStart < last {
		absent = d.samples[last].s3.minus(d.samples[absentStart].s3)
	}
	return real, absent
}

// series is a drain's course over time, in windows of a few seconds: seconds since the start, the
// cleanup rate, the claim's p99 and the foreground load's p99 (ms).
type series struct {
	t, rate, limit, signal, aim, claimP99, fgP99 []float64
}

func seriesOf(d *drainResult, window int) series {
	var s series
	start := d.samples[0].at
	during := slices.SortedFunc(slices.Values(d.during), func(a, b outcome) int { return a.at.Compare(b.at) })
	for i := window; i < len(d.samples); i += window {
		a, z := d.samples[i-window], d.samples[i]
		secs := z.at.Sub(a.at).Seconds()
		s.t = append(s.t, z.at.Sub(start).Seconds())
		s.rate = append(s.rate, (z.tombstoned-a.tombstoned)/secs)
		s.limit = append(s.limit, cmp.Or(z.rateLimit, math.NaN())) // 0: no limit, nothing to draw
		s.signal = append(s.signal, z.signal)
		s.aim = append(s.aim, z.aim)
		s.claimP99 = append(s.claimP99, 1000*z.claim.minus(a.claim).quantile(0.99))
		s.fgP99 = append(s.fgP99, p99Between(during, a.at, z.at))
	}
	return s
}

// p99Between is the p99 in ms of the outcomes sent in [from, to), of outs sorted by when they were
// sent; NaN if none.
func p99Between(outs []outcome, from, to time.Time) float64 {
	i, _ := slices.BinarySearchFunc(outs, from, func(o outcome, t time.Time) int { return o.at.Compare(t) })
	j, _ := slices.BinarySearchFunc(outs, to, func(o outcome, t time.Time) int { return o.at.Compare(t) })
	if i >= j {
		return math.NaN()
	}
	lat := make([]time.Duration, 0, j-i)
	for _, o := range outs[i:j] {
		lat = append(lat, o.latency)
	}
	slices.Sort(lat)
	return float64(percentile(lat, 0.99)) / float64(time.Millisecond)
}
