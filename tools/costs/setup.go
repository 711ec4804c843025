package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"pastebin/blob"
	"pastebin/cache"
	"pastebin/expiry"
	"pastebin/store"
	"pastebin/tools/internal/benchdata"
)

// measurement is one run: its own database, bucket and Redis prefix, and the counters around them.
type measurement struct {
	cfg     config
	out     io.Writer
	logger  *slog.Logger
	dbs     *benchdata.Databases // the server, for creating and dropping the database
	dbName  string
	store   *store.Store
	meter   *meter
	bucket  *blob.Bucket
	s3      *callCounter
	redis   *callCounter
	cache   *cache.Cache
	expirer *expiry.Expirer
	closers []func()
}

func newMeasurement(ctx context.Context, cfg config, out io.Writer) (_ *measurement, err error) {
	m := &measurement{cfg: cfg, out: out, logger: slog.New(slog.DiscardHandler), s3: newCallCounter(), redis: newCallCounter()}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	if m.dbs, err = benchdata.OpenDatabases(ctx, cfg.services.AdminURL); err != nil {
		return nil, err
	}
	m.dbName = "pb_costs_" + randomHex(6)
	if err := m.dbs.Create(ctx, m.dbName); err != nil {
		return nil, err
	}
	if m.store, err = store.Open(ctx, m.dbs.URL(m.dbName), m.logger); err != nil {
		return nil, err
	}
	if _, err := m.store.Migrate(ctx); err != nil {
		return nil, err
	}
	if _, err := m.store.Pool().Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pgstattuple"); err != nil {
		return nil, err
	}
	if m.meter, err = newMeter(ctx, m.store.Pool()); err != nil {
		return nil, err
	}
	if err := m.openBucket(ctx); err != nil {
		return nil, err
	}
	if err := m.openCache(); err != nil {
		return nil, err
	}
	xcfg := expiry.DefaultConfig()
	xcfg.Workers, xcfg.Host = cfg.workers, "costs"
	locks := expiry.Locks{Claim: m.cache.NewLock("claim", 5*time.Second, 10*time.Second), Sweep: m.cache.NewLease("sweep", time.Minute)}
	m.expirer, err = expiry.New(xcfg, m.store, m.bucket, m.cache, locks, m.logger, prometheus.NewRegistry())
	return m, err
}

// openBucket opens a bucket of its own behind a proxy that counts the S3 calls.
func (m *measurement) openBucket(ctx context.Context) error {
	target, err := url.Parse(m.cfg.services.S3Endpoint)
	if err != nil {
		return err
	}
	proxy := httputil.NewSingleHostReverseProxy(target) // keeps the Host header, which the signature covers
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.s3.add(s3Call(r), 1)
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	m.closers = append(m.closers, func() { srv.Close() })
	through := m.cfg.services
	through.S3Endpoint = "http://" + ln.Addr().String()
	m.bucket, err = through.OpenBucket(ctx, "pb-costs-"+randomHex(4))
	return err
}

// s3Call names an S3 request by its operation.
func s3Call(r *http.Request) string {
	switch {
	case r.Method == http.MethodPost && r.URL.Query().Has("delete"):
		return "DeleteObjects"
	case r.Method == http.MethodPut:
		return "PutObject"
	case r.Method == http.MethodGet && r.URL.Query().Has("list-type"):
		return "ListObjectsV2"
	}
	return r.Method
}

// openCache opens Redis (one server or a cluster) with a hook that counts commands and pipelines.
func (m *measurement) openCache() error {
	c, err := cache.OpenURL(m.cfg.services.RedisURL, cache.ClientOptions{}, "costs:"+randomHex(4)+":", m.logger)
	if err != nil {
		return err
	}
	m.cache = c
	c.Client().AddHook(countingHook{m.redis})
	m.closers = append(m.closers, func() { c.Close() })
	return nil
}

func (m *measurement) close() {
	for i := len(m.closers) - 1; i >= 0; i-- {
		m.closers[i]()
	}
	if m.store != nil {
		m.store.Close()
	}
	if m.dbs != nil && m.dbName != "" {
		_ = m.dbs.Drop(context.Background(), m.dbName)
	}
	if m.dbs != nil {
		m.dbs.Close()
	}
}

// callCounter counts calls by name.
type callCounter struct {
	mu sync.Mutex
	n  map[string]int64
}

func newCallCounter() *callCounter { return &callCounter{n: map[string]int64{}} }

func (c *callCounter) add(name string, n int64) {
	c.mu.Lock()
	c.n[name] += n
	c.mu.Unlock()
}

// take returns the counts so far and starts again from zero.
func (c *callCounter) take() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[string]int64{}
	return out
}

// countingHook counts Redis round trips: single commands, and pipelines with their commands.
type countingHook struct{ c *callCounter }

func (h countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.c.add("round trips", 1)
		h.c.add("commands", 1)
		return next(ctx, cmd)
	}
}

func (h countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.c.add("round trips", 1)
		h.c.add("commands", int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
