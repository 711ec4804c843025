package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pastebin/blob/blobtest"
)

// throughputClients is how many requests are in flight at once in the throughput benchmarks: as
// many as wrk's connections in the figures these benchmarks stand in for.
const throughputClients = 32

// throughputRound is how many requests of one kind a round sends before the other kind's turn.
// The two kinds alternate round by round, so that a shared machine's load weighs on both alike.
const throughputRound = 200

// BenchmarkCreateThroughput measures creates of new 1 KiB content per second from 32 clients at
// once, over loopback, with the embedded S3 server's store in process (the default deployment's),
// against GET /healthz in the same run, which touches no service: "creates/healthz" is the
// creates' rate over healthz's.
func BenchmarkCreateThroughput(b *testing.B) {
	e := newEnv(b, withBucket(blobtest.InProcess(b)))
	client := throughputClient()
	run := rand.Text() // -count repeats this benchmark: each run needs content of its own
	var n atomic.Int64
	create := func() error {
		body := fmt.Appendf(nil, "%s %d\n", run, n.Add(1))
		body = append(body, bytes.Repeat([]byte("x"), 1024-len(body))...)
		return expect(client.Post(e.srv.URL+"/", "text/plain", bytes.NewReader(body)))(http.StatusCreated)
	}
	healthz := func() error { return expect(client.Get(e.srv.URL + "/healthz"))(http.StatusOK) }
	benchAgainst(b, "creates/s", create, "healthz/s", healthz, "creates/healthz")
}

// BenchmarkCachedReadFloor measures raw reads of a 1 KiB paste that Redis holds, from 32 clients at
// once, against the least a Go service can do for the same answer in the same run (net/http, one
// go-redis GET, write the bytes): "reads/floor" is the reads' rate over the floor's.
func BenchmarkCachedReadFloor(b *testing.B) {
	e := newEnv(b)
	content := string(bytes.Repeat([]byte("0123456789abcde\n"), 64))
	p := e.create(content, "")
	if r := e.get("/raw/" + p.code); r.StatusCode != http.StatusOK || r.text() != content {
		b.Fatalf("first read: %d", r.StatusCode)
	}
	key := e.prefix + "floor"
	if err := e.rdb.Set(context.Background(), key, content, time.Hour).Err(); err != nil {
		b.Fatal(err)
	}
	floor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := e.rdb.Get(r.Context(), key).Bytes()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(v)
	}))
	b.Cleanup(floor.Close)
	client := throughputClient()
	read := func() error { return expect(client.Get(e.srv.URL + "/raw/" + p.code))(http.StatusOK) }
	floorRead := func() error { return expect(client.Get(floor.URL))(http.StatusOK) }
	benchAgainst(b, "reads/s", read, "floor/s", floorRead, "reads/floor")
}

func throughputClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: throughputClients}}
}

// expect reads the answer to its end and returns a check of its status.
func expect(resp *http.Response, err error) func(want int) error {
	return func(want int) error {
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != want {
			return fmt.Errorf("%s %s: %d, want %d", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, want)
		}
		return nil
	}
}

// benchAgainst sends b.N requests of do and as many of base, from throughputClients clients at once,
// in alternating rounds, and reports both rates, their ratio, and the 99th percentile of do's
// latency.
func benchAgainst(b *testing.B, unit string, do func() error, baseUnit string, base func() error, ratioUnit string) {
	var took, baseTook time.Duration
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for done := 0; done < b.N; done += throughputRound {
		n := min(throughputRound, b.N-done)
		d, _ := timeParallel(b, n, base)
		baseTook += d
		d, lat := timeParallel(b, n, do)
		took, latencies = took+d, append(latencies, lat...)
	}
	rate, baseRate := float64(b.N)/took.Seconds(), float64(b.N)/baseTook.Seconds()
	b.ReportMetric(rate, unit)
	b.ReportMetric(baseRate, baseUnit)
	b.ReportMetric(rate/baseRate, ratioUnit)
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
}

// timeParallel sends n requests of do from throughputClients clients at once and returns how long
// they took, and each one's latency.
func timeParallel(b *testing.B, n int, do func() error) (time.Duration, []time.Duration) {
	var next atomic.Int64
	latencies := make([]time.Duration, n)
	var wg sync.WaitGroup
	start := time.Now()
	for range throughputClients {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				t := time.Now()
				if err := do(); err != nil {
					b.Error(err)
					return
				}
				latencies[i-1] = time.Since(t)
			}
		})
	}
	wg.Wait()
	return time.Since(start), latencies
}
