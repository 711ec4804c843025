package api_test

import (
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"pastebin/api"
	"pastebin/cache/cachetest"
	"pastebin/paste"
)

// BenchmarkHTTP measures the main routes over loopback against real PostgreSQL, Redis and S3, one
// request at a time. GET /healthz, which touches none of them, is the baseline: on a shared machine
// the ratio of each route to it says more than its time alone (make bench prints both).
func BenchmarkHTTP(b *testing.B) {
	e := newEnv(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	small := e.create("package main\n\nfunc main() {}\n", "")
	// Past the cache's size limit: Redis holds its metadata, S3 serves its bytes on every read.
	large := e.create(strings.Repeat("0123456789abcdef\n", 8<<10), "")

	b.Run("healthz", func(b *testing.B) { benchGet(b, client, e.srv.URL+"/healthz") })
	b.Run("raw, cached in Redis", func(b *testing.B) { benchGet(b, client, e.srv.URL+"/raw/"+small.code) })
	b.Run("raw, 136KiB from S3", func(b *testing.B) { benchGet(b, client, e.srv.URL+"/raw/"+large.code) })
	b.Run("metadata", func(b *testing.B) { benchGet(b, client, e.srv.URL+"/api/v1/pastes/"+small.code) })
	b.Run("create, content already stored", func(b *testing.B) {
		benchCreate(b, client, e.srv.URL, func(int) string { return "the same bytes every time\n" })
	})
	b.Run("create, new content", func(b *testing.B) {
		run := rand.Text() // -count repeats this benchmark: each run needs content of its own
		benchCreate(b, client, e.srv.URL, func(i int) string { return fmt.Sprintf("new content %d of run %s\n", i, run) })
	})
}

func benchGet(b *testing.B, client *http.Client, url string) {
	for b.Loop() {
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d", url, resp.StatusCode)
		}
	}
}

func benchCreate(b *testing.B, client *http.Client, base string, content func(int) string) {
	i := 0
	for b.Loop() {
		i++
		resp, err := client.Post(base+"/", "text/plain", strings.NewReader(content(i)))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("create: %d", resp.StatusCode)
		}
	}
}

// BenchmarkCreateRateLimit measures creates per second with the create rate limit off, and on
// (counted in Redis), by many clients at once over loopback: each goroutine is a client of its own
// (a trusted proxy names it), and the limit is far above what they send, so every create is
// counted and none refused. Creates share their content, so each is one database transaction and no
// upload: the limiter's cost shows. Read the "on" rows against "off". On loopback a Redis round trip
// is far shorter than the create's transaction, so the "1ms away" row puts Redis behind a proxy that
// delays each message by a millisecond, as a Redis across a network would: a limiter that counted
// one create at a time in Redis would cap the rate at a few hundred a second there.
func BenchmarkCreateRateLimit(b *testing.B) {
	limit := withRates(api.Rate{Requests: 1 << 30, Window: time.Minute}, api.Rate{})
	for _, tt := range []struct {
		name string
		opts func(b *testing.B) []envOption
	}{
		{"limit off", func(*testing.B) []envOption { return nil }},
		{"limit on, single Redis", func(*testing.B) []envOption { return []envOption{limit} }},
		{"limit on, Redis Cluster", func(*testing.B) []envOption { return []envOption{limit, withRedis(cachetest.Cluster)} }},
		{"limit on, single Redis 1ms away", func(b *testing.B) []envOption {
			addr := redisLatencyProxy(b, cachetest.URL(b, cachetest.Single), time.Millisecond)
			rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
			b.Cleanup(func() { rdb.Close() })
			return []envOption{limit, withRateRedis(rdb)}
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			e := newEnv(b, append(tt.opts(b), withConfig(func(c *api.Config) {
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
				c.DedupTiming = paste.DedupOff // the fast path unpadded, so that the limiter's cost shows
			}))...)
			benchParallelCreates(b, e)
		})
	}
}

// redisLatencyProxy forwards connections to the Redis of redisURL, each message d later in each
// direction, and returns its address.
func redisLatencyProxy(b *testing.B, redisURL string, d time.Duration) string {
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", opts.Addr)
			if err != nil {
				client.Close()
				continue
			}
			go delayCopy(server, client, d)
			go delayCopy(client, server, d)
		}
	}()
	return ln.Addr().String()
}

// delayCopy copies from src to dst, each read d later, until either side closes.
func delayCopy(dst, src net.Conn, d time.Duration) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		time.Sleep(d)
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

// benchParallelCreates sends creates from 8 goroutines per CPU, each as a client of its own address.
func benchParallelCreates(b *testing.B, e *env) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var next atomic.Int32
	e.create("the same bytes every time\n", "") // the content is stored: every create takes the fast path
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		n := next.Add(1)
		addr := fmt.Sprintf("198.51.%d.%d", n/256, n%256)
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/", strings.NewReader("the same bytes every time\n"))
			req.Header.Set("X-Forwarded-For", addr)
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				b.Errorf("create: %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}
