package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pastebin/store"
	"pastebin/store/storetest"
)

// BenchmarkPacingSignals measures what the automatic pacing could listen to. One serve process
// with two cleanup workers carries a steady open-loop load (cached raw reads, metadata reads,
// creates of new and shared content); a drain runs at several ceilings, then paced automatically;
// each line shows the drain's rate against what users saw (the load's p50/p99, the baseline first)
// and the candidate signals: the finishing transaction's latency, a probe query's latency through
// its own connection, and PostgreSQL's active backends and lock waiters. It is a measurement on a
// shared machine, not a test: it runs only with PASTEBIN_PACING_BENCH=1 (docs/performance.md, "Pacing the drain").
func BenchmarkPacingSignals(b *testing.B) {
	if os.Getenv("PASTEBIN_PACING_BENCH") == "" {
		b.Skip("a measurement of several minutes: set PASTEBIN_PACING_BENCH=1")
	}
	loadRate, _ := strconv.Atoi(orDefault(os.Getenv("PASTEBIN_PACING_BENCH_LOAD"), "300"))
	scale, _ := strconv.ParseFloat(orDefault(os.Getenv("PASTEBIN_PACING_BENCH_SCALE"), "1"), 64)
	phases := []pacingPhase{
		{name: "baseline, no drain"},
		{name: "drain, no limit", pastes: 200000},
		{name: "drain at most 8000/s", pastes: 120000, maxRate: "8000"},
		{name: "drain at most 4000/s", pastes: 60000, maxRate: "4000"},
		{name: "drain at most 2000/s", pastes: 30000, maxRate: "2000"},
		{name: "drain at most 1000/s", pastes: 15000, maxRate: "1000"},
		{name: "drain, pacing auto", pastes: 200000, pacing: "auto"},
		{name: "baseline again"},
	}
	total := 0
	for i := range phases {
		phases[i].pastes = int(float64(phases[i].pastes) * scale)
		phases[i].from, total = total+1, total+phases[i].pastes
	}
	// Every phase's pastes are loaded at once, live; each phase expires its own range when it starts.
	// Their blobs are not uploaded: S3 answers a delete of a missing key as done.
	d := newDeployment(b, storetest.SeedSpec{Pastes: 1, Expired: 0, Tag: "Z"})
	if _, err := storetest.Seed(context.Background(), d.store.Pool(), storetest.SeedSpec{Pastes: total, Shared: 0.4, Tag: "P"}); err != nil {
		b.Fatal(err)
	}
	d.env["PASTEBIN_ADMIN_TOKEN"] = "pacing-bench-admin-token"
	d.env["PASTEBIN_RATE_CREATE"] = "off"
	d.env["PASTEBIN_CLEANUP_WORKERS"] = "2"
	w := os.Stdout
	printPacingHeader(w, loadRate)
	for _, ph := range phases {
		printPacingRow(w, measurePhase(b, d, ph, loadRate))
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

type pacingPhase struct {
	name            string
	from, pastes    int // the seed's pastes from..from+pastes-1 expire for this phase
	maxRate, pacing string
}

type pacingResult struct {
	phase                  string
	seconds, drainRate     float64
	fgP50, fgP99           time.Duration
	fgCount, fgErrors      int
	finishMean, finishP99  time.Duration
	probeP50, probeP99     time.Duration
	active, lockWaiters    float64
	rateLimit, pacedReason string
}

// measurePhase restarts serve with the phase's pacing, seeds its expired pastes, and measures while
// the drain runs (or for 15 s without one).
func measurePhase(b *testing.B, d deployment, ph pacingPhase, loadRate int) pacingResult {
	ctx := context.Background()
	if ph.pastes > 0 {
		_, err := d.store.Pool().Exec(ctx, `UPDATE pastes SET expires_at = now() - interval '1 hour'
			WHERE short_code BETWEEN $1 AND $2`, fmt.Sprintf("P%010d", ph.from), fmt.Sprintf("P%010d", ph.from+ph.pastes-1))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.store.Pool().Exec(ctx, `VACUUM ANALYZE pastes`); err != nil {
			b.Fatal(err)
		}
	}
	env := merged(d.env, map[string]string{"PASTEBIN_CLEANUP_MAX_RATE": ph.maxRate, "PASTEBIN_CLEANUP_PACING": orDefault(ph.pacing, "off")})
	base, stop := startServe(b, env)
	defer stop()
	l := newOpenLoad(b, base, 500)
	stopLoad := l.run(loadRate)
	time.Sleep(3 * time.Second) // warm the cache and the connections
	l.reset()
	s := newSampler(b, d.store.Pool())
	metricsBefore := scrape(b, base)
	start := time.Now()
	run := store.Run{}
	if ph.pastes == 0 {
		time.Sleep(15 * time.Second)
	} else {
		run = drain(b, base)
	}
	elapsed := time.Since(start)
	fg := l.snapshot()
	probes, active, waiters := s.stop()
	stopLoad()
	metricsAfter := scrape(b, base)
	res := pacingResult{phase: ph.name, seconds: elapsed.Seconds(), fgCount: len(fg.lat), fgErrors: fg.errors,
		fgP50: quantile(fg.lat, .5), fgP99: quantile(fg.lat, .99), probeP50: quantile(probes, .5), probeP99: quantile(probes, .99),
		active: active, lockWaiters: waiters}
	if ph.pastes > 0 {
		res.drainRate = float64(run.Tombstoned) / elapsed.Seconds()
		res.finishMean, res.finishP99 = histogramDelta(metricsBefore, metricsAfter, "pastebin_cleanup_finish_seconds")
		res.pacedReason = run.Pacing.Reason
		if run.Pacing.RateLimit != nil {
			res.rateLimit = fmt.Sprintf("%.0f", *run.Pacing.RateLimit)
		}
	}
	return res
}

func merged(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// drain starts a run through the admin API and follows its report until it ends.
func drain(b *testing.B, base string) store.Run {
	req, _ := http.NewRequest(http.MethodPost, base+"/admin/cleanup", nil)
	req.Header.Set("Authorization", "Bearer pacing-bench-admin-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	var run store.Run
	json.NewDecoder(resp.Body).Decode(&run)
	resp.Body.Close()
	for i := 0; i < 6000; i++ {
		time.Sleep(100 * time.Millisecond)
		req, _ := http.NewRequest(http.MethodGet, base+"/admin/cleanup/runs/"+strconv.FormatInt(run.ID, 10), nil)
		req.Header.Set("Authorization", "Bearer pacing-bench-admin-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&run)
		resp.Body.Close()
		if run.Status != "running" {
			return run
		}
	}
	b.Fatal("the drain did not end within 10 minutes")
	return run
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// scrape reads /metrics as name{labels} -> value.
func scrape(b *testing.B, base string) map[string]float64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// histogramDelta returns the mean and the p99 (the upper bound of its bucket) of a histogram's
// observations between two scrapes.
func histogramDelta(before, after map[string]float64, name string) (time.Duration, time.Duration) {
	count := after[name+"_count"] - before[name+"_count"]
	if count == 0 {
		return 0, 0
	}
	mean := (after[name+"_sum"] - before[name+"_sum"]) / count
	var bounds []float64
	for k := range after {
		if strings.HasPrefix(k, name+`_bucket{le="`) && !strings.Contains(k, "+Inf") {
			le, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(k, name+`_bucket{le="`), `"}`), 64)
			bounds = append(bounds, le)
		}
	}
	slices.Sort(bounds)
	p99 := 0.0
	for _, le := range bounds {
		k := name + `_bucket{le="` + strconv.FormatFloat(le, 'g', -1, 64) + `"}`
		if after[k]-before[k] >= 0.99*count {
			p99 = le
			break
		}
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	return sec(mean), sec(p99)
}

func printPacingHeader(w io.Writer, loadRate int) {
	fmt.Fprintf(w, "foreground load %d req/s, open loop; finish p99 is its histogram bucket's upper bound\n", loadRate)
	fmt.Fprintf(w, "%-22s %7s %7s %8s %8s %11s %9s %9s %8s %8s %6s %6s  %s\n", "phase", "seconds", "drain/s", "fg p50", "fg p99",
		"fg errors", "finish", "finish", "probe", "probe", "active", "lock", "limit")
	fmt.Fprintf(w, "%-22s %7s %7s %8s %8s %11s %9s %9s %8s %8s %6s %6s\n", "", "", "", "", "", "", "mean", "p99<=", "p50", "p99", "", "waits")
}

func printPacingRow(w io.Writer, x pacingResult) {
	ms := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1000, 'f', 1, 64) + "ms" }
	fmt.Fprintf(w, "%-22s %7.1f %7.0f %8s %8s %11s %9s %9s %8s %8s %6.2f %6.2f  %s %s\n", x.phase, x.seconds, x.drainRate,
		ms(x.fgP50), ms(x.fgP99), fmt.Sprintf("%d/%d", x.fgErrors, x.fgCount), ms(x.finishMean), ms(x.finishP99),
		ms(x.probeP50), ms(x.probeP99), x.active, x.lockWaiters, x.rateLimit, x.pacedReason)
}
