package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// openLoad is an open-loop foreground load: requests start on a fixed schedule whatever the answers do.
type openLoad struct {
	b      *testing.B
	base   string
	client *http.Client
	codes  []string
	mu     sync.Mutex
	lat    []time.Duration
	errors int
}

func newOpenLoad(b *testing.B, base string, live int) *openLoad {
	l := &openLoad{b: b, base: base, client: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	for i := range live {
		code, err := l.create(fmt.Sprintf("live paste %d %d", i, rand.Int64()))
		if err != nil {
			b.Fatal(err)
		}
		l.codes = append(l.codes, code)
	}
	return l
}

func (l *openLoad) create(content string) (string, error) {
	resp, err := l.client.Post(l.base+"/?expires_in=1h", "text/plain", strings.NewReader(content))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("create: %d %s", resp.StatusCode, body)
	}
	url := strings.SplitN(string(body), "\n", 2)[0]
	return url[strings.LastIndex(url, "/")+1:], nil
}

func (l *openLoad) one() error {
	code := l.codes[rand.N(len(l.codes))]
	switch r := rand.N(10); {
	case r < 6:
		return l.get("/raw/" + code)
	case r < 8:
		return l.get("/api/v1/pastes/" + code)
	case r < 9:
		_, err := l.create(fmt.Sprintf("shared paste %d", rand.N(50)))
		return err
	default:
		_, err := l.create(fmt.Sprintf("new paste %d", rand.Int64()))
		return err
	}
}

func (l *openLoad) get(path string) error {
	resp, err := l.client.Get(l.base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d", path, resp.StatusCode)
	}
	return nil
}

// run starts requests at rate per second until the returned stop is called.
func (l *openLoad) run(rate int) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var inFlight atomic.Int64
	wg.Go(func() {
		t := time.NewTicker(time.Second / time.Duration(rate))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if inFlight.Load() > 256 {
				l.record(0, fmt.Errorf("overloaded"))
				continue
			}
			inFlight.Add(1)
			wg.Go(func() {
				defer inFlight.Add(-1)
				start := time.Now()
				err := l.one()
				l.record(time.Since(start), err)
			})
		}
	})
	return func() { close(stop); wg.Wait() }
}

func (l *openLoad) record(d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errors++
		return
	}
	l.lat = append(l.lat, d)
}

func (l *openLoad) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lat, l.errors = nil, 0
}

func (l *openLoad) snapshot() struct {
	lat    []time.Duration
	errors int
} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return struct {
		lat    []time.Duration
		errors int
	}{slices.Clone(l.lat), l.errors}
}

// sampler times a probe query through its own connection every 20 ms and samples pg_stat_activity
// every 100 ms.
type sampler struct {
	done             chan struct{}
	wg               sync.WaitGroup
	probes           []time.Duration
	active, waiters  float64
	activityReadings int
}

func newSampler(b *testing.B, pool *pgxpool.Pool) *sampler {
	s := &sampler{done: make(chan struct{})}
	ctx := context.Background()
	s.wg.Go(func() {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return
		}
		defer conn.Release()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-s.done:
				return
			case <-t.C:
			}
			start := time.Now()
			var n int
			conn.QueryRow(ctx, `SELECT count(*) FROM pastes WHERE short_code = $1`, fmt.Sprintf("Z%010d", i)).Scan(&n)
			s.probes = append(s.probes, time.Since(start))
			if i%5 == 0 {
				var a, w float64
				conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'active'), count(*) FILTER (WHERE wait_event_type = 'Lock')
					FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&a, &w)
				s.active, s.waiters, s.activityReadings = s.active+a, s.waiters+w, s.activityReadings+1
			}
		}
	})
	return s
}

func (s *sampler) stop() ([]time.Duration, float64, float64) {
	close(s.done)
	s.wg.Wait()
	n := float64(max(s.activityReadings, 1))
	return s.probes, s.active / n, s.waiters / n
}
