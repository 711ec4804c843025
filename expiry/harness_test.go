package expiry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"pastebin/blob"
	"pastebin/blob/blobtest"
	"pastebin/cache"
	"pastebin/cache/cachetest"
	"pastebin/store"
	"pastebin/store/storetest"
)

// env is a cleanup subsystem over its own database, bucket and Redis prefix.
type env struct {
	t      *testing.T
	dbURL  string
	store  *store.Store
	bucket *blob.Bucket
	s3     blob.Config
	cache  *cache.Cache
	rdb    redis.UniversalClient
	redis  cachetest.Kind
	prefix string
	logs   *syncBuffer
	reg    *prometheus.Registry // the metrics of the last expirer made
}

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newEnv is an env on the single test Redis.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOf(t, cachetest.Single)
}

// newEnvOf is an env on the test Redis of kind.
func newEnvOf(t *testing.T, kind cachetest.Kind) *env {
	t.Helper()
	e := &env{t: t, logs: &syncBuffer{}, redis: kind}
	logger := slog.New(slog.NewTextHandler(e.logs, nil))
	e.dbURL = storetest.NewDatabase(t)
	var err error
	if e.store, err = store.Open(context.Background(), e.dbURL, logger); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.store.Close)
	e.s3 = blobtest.Config(t)
	e.bucket = blobtest.Open(t, e.s3)
	e.cache, e.prefix = cachetest.NewOf(t, kind, logger)
	e.rdb = e.cache.Client()
	return e
}

// expirer returns a cleanup subsystem with workers on the env's services.
func (e *env) expirer(workers int, opts ...func(*Config)) *Expirer {
	e.t.Helper()
	cfg := DefaultConfig()
	// Unpaced unless a test paces it: the tests of races want the workers to overlap all they can,
	// and a loaded machine would hold a paced drain at its minimum rate.
	cfg.Workers, cfg.Host, cfg.Pacing.Mode = workers, "test", PacingOff
	for _, o := range opts {
		o(&cfg)
	}
	logger := slog.New(slog.NewTextHandler(e.logs, nil))
	e.reg = prometheus.NewRegistry()
	x, err := New(cfg, e.store, e.bucket, e.cache, testLocks(e.cache), logger, e.reg)
	if err != nil {
		e.t.Fatal(err)
	}
	return x
}

// paste creates a paste through the store as the API does: upload, then one transaction.
func (e *env) paste(content string, expiresAt time.Time) string {
	e.t.Helper()
	ctx := context.Background()
	h := sha256.Sum256([]byte(content))
	np := store.NewPaste{ContentHash: h[:], Size: int64(len(content)), OwnerTokenHash: store.HashToken("t"), ExpiresAt: expiresAt}
	p, err := e.store.CreatePasteShared(ctx, np)
	if err == store.ErrNoContent {
		key, _ := blob.NewKey(h[:])
		if err := e.bucket.Put(ctx, key, []byte(content)); err != nil {
			e.t.Fatal(err)
		}
		p, err = e.store.CreatePasteWithBlob(ctx, np, key)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	// Filled as a reader would have two hours ago, so that expired pastes are cached too.
	then := time.Now().Add(-2 * time.Hour)
	e.cache.Put(ctx, e.cache.Get(ctx, p.Code, then), cache.Paste{Code: p.Code, Size: p.Size, Content: []byte(content),
		ExpiresAt: p.ExpiresAt}, time.Hour, then)
	return p.Code
}

// seed loads spec with set-based SQL, uploads its blobs in parallel, and caches every paste.
func (e *env) seed(spec storetest.SeedSpec) {
	e.t.Helper()
	ctx := context.Background()
	keys, err := storetest.Seed(ctx, e.store.Pool(), spec)
	if err != nil {
		e.t.Fatal(err)
	}
	var g errgroup.Group
	g.SetLimit(16)
	for _, k := range keys {
		g.Go(func() error { return e.bucket.Put(ctx, k, []byte(k)) })
	}
	if err := g.Wait(); err != nil {
		e.t.Fatal(err)
	}
	codes := e.strings(`SELECT short_code FROM pastes WHERE short_code LIKE $1 || '%'`, spec.Tag)
	_, err = e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range codes {
			p.Set(ctx, e.cache.Key(c), "cached", time.Hour)
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) count(query string, args ...any) int {
	e.t.Helper()
	return storetest.Count(e.t, e.store.Pool(), query, args...)
}

func (e *env) exec(query string, args ...any) {
	e.t.Helper()
	if _, err := e.store.Pool().Exec(context.Background(), query, args...); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
}

func (e *env) strings(query string, args ...any) []string {
	e.t.Helper()
	rows, err := e.store.Pool().Query(context.Background(), query, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// audit checks invariants 1 to 3 against the database and a listing of the bucket.
func (e *env) audit() storetest.Audit {
	e.t.Helper()
	return storetest.Check(e.t, e.store.Pool(), blobtest.Keys(e.t, e.bucket))
}

// cachedCodes lists the codes Redis holds an entry for, by SCAN.
func (e *env) cachedCodes() []string {
	e.t.Helper()
	var codes []string
	for _, k := range cachetest.Keys(e.t, e.rdb, e.prefix+"paste:") {
		codes = append(codes, strings.TrimPrefix(k, e.prefix+"paste:"))
	}
	return codes
}

func (e *env) runOnce(x *Expirer) store.Run {
	e.t.Helper()
	r, err := x.RunOnce(context.Background(), "test")
	if err != nil {
		e.t.Fatal(err)
	}
	if r.Status != "finished" {
		e.t.Fatalf("run %d ended %s: %s\nlogs:\n%s", r.ID, r.Status, r.LastError, e.logs.String())
	}
	return r
}

// testLocks are the locks of a test's cleanup subsystem on c's Redis.
func testLocks(c *cache.Cache) Locks {
	return Locks{Claim: c.NewLock("claim", 5*time.Second, 10*time.Second), Sweep: c.NewLease("sweep", 10*time.Second)}
}

// newDeadRedis returns a cache whose Redis cannot be reached: nothing listens on its port.
func newDeadRedis(t *testing.T, e *env) *cache.Cache {
	t.Helper()
	c := cache.Open(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1},
		e.prefix, slog.New(slog.NewTextHandler(e.logs, nil)))
	t.Cleanup(func() { c.Close() })
	return c
}

// openBucket opens cfg's bucket without removing it at the end (its owner does).
func openBucket(t *testing.T, cfg blob.Config) *blob.Bucket {
	t.Helper()
	b, err := blob.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// metric returns the value of the counter or gauge name of the last expirer made, with the label
// pairs given (name, value, ...); 0 if it has no such series.
func (e *env) metric(name string, labels ...string) float64 {
	e.t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m.GetLabel(), labels) {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func hasLabels(got []*dto.LabelPair, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		if !slices.ContainsFunc(got, func(l *dto.LabelPair) bool { return l.GetName() == want[i] && l.GetValue() == want[i+1] }) {
			return false
		}
	}
	return true
}
