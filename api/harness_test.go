package api_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"pastebin/api"
	"pastebin/blob"
	"pastebin/blob/blobtest"
	"pastebin/cache"
	"pastebin/cache/cachetest"
	"pastebin/expiry"
	"pastebin/paste"
	"pastebin/store"
	"pastebin/store/storetest"
)

// env is one API server over its own database, bucket and Redis prefix.
type env struct {
	t       testing.TB
	srv     *httptest.Server
	store   *store.Store
	bucket  *blob.Bucket
	cache   *cache.Cache
	rdb     redis.UniversalClient
	redis   cachetest.Kind // the test Redis: the single server unless withRedis says otherwise
	prefix  string
	clock   *clock
	freed   chan struct{}
	spec    routers.Router
	noCheck bool // skip the OpenAPI check (for deliberately broken requests the router cannot match)
	expirer *expiry.Expirer
	workers int // cleanup workers behind /admin; 0 leaves the API without a cleanup runner
	logger  *slog.Logger
	cfg     api.Config
	deps    api.Deps
	// Rate limits are counted in Redis when ratesInRedis is set: rateRedis, or else the test's Redis.
	ratesInRedis bool
	rateRedis    redis.UniversalClient
	depsHooks    []func(*api.Deps)
}

type envOption func(*api.Config, *env)

func withMaxSize(n int64) envOption { return func(c *api.Config, _ *env) { c.MaxPasteBytes = n } }

func withBucket(b *blob.Bucket) envOption { return func(_ *api.Config, e *env) { e.bucket = b } }

// withAdmin turns the admin API on with token, over a real cleanup subsystem with workers.
func withAdmin(token string, workers int) envOption {
	return func(c *api.Config, e *env) {
		h := sha256.Sum256([]byte(token))
		c.AdminTokenHash, e.workers = h[:], workers
	}
}

// withRates turns on the per-client limits of creates and of failed deletes (a zero Rate stays
// off), counted in the test's Redis, under the test's prefix.
func withRates(create, deleteFailures api.Rate) envOption {
	return func(c *api.Config, e *env) {
		c.CreateRate, c.DeleteFailureRate, e.ratesInRedis = create, deleteFailures, true
	}
}

// withRateRedis counts the rate limits in rdb instead of the test's Redis.
func withRateRedis(rdb redis.UniversalClient) envOption {
	return func(_ *api.Config, e *env) { e.rateRedis = rdb }
}

// withRedis runs the cache and the rate limits on the test Redis of kind.
func withRedis(kind cachetest.Kind) envOption { return func(_ *api.Config, e *env) { e.redis = kind } }

// withDeps changes the API's dependencies before its server starts.
func withDeps(f func(*api.Deps)) envOption {
	return func(_ *api.Config, e *env) { e.depsHooks = append(e.depsHooks, f) }
}

// withConfig changes the API's configuration.
func withConfig(f func(*api.Config)) envOption { return func(c *api.Config, _ *env) { f(c) } }

// withLogger gives the API, the store and the cache logger.
func withLogger(l *slog.Logger) envOption { return func(_ *api.Config, e *env) { e.logger = l } }

// clock is the API's clock, which tests move forward to see expiry through the cache.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

var testLogger = slog.New(slog.DiscardHandler)

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, clock: &clock{}, freed: make(chan struct{}, 100), logger: testLogger, redis: cachetest.Single}
	cfg := api.Config{
		MaxPasteBytes: 1 << 20,
		Expiry:        paste.ExpiryPolicy{Default: 24 * time.Hour, Max: 30 * 24 * time.Hour},
		CacheTTL:      time.Hour, CacheMaxBytes: 64 << 10, RenderCacheBytes: 32 << 20, DecodedCacheBytes: 32 << 20,
		OpenAPISpec: []byte("openapi: 3.1.0\n"),
	}
	for _, o := range opts {
		o(&cfg, e)
	}
	e.store = storetest.New(t, e.logger)
	if e.bucket == nil {
		e.bucket = blobtest.New(t)
	}
	e.cache, e.prefix = cachetest.NewOf(t, e.redis, e.logger)
	e.rdb = e.cache.Client()
	e.spec = loadSpec(t)
	cfg.RateKeyPrefix = e.prefix + "rate:" // deleted with the test's other keys
	deps := api.Deps{
		Logger: e.logger, Store: e.store, Bucket: e.bucket, Cache: e.cache, Registry: prometheus.NewRegistry(),
		Now: e.clock.now, BlobsFreed: func() {
			select {
			case e.freed <- struct{}{}:
			default:
			}
		},
	}
	if e.workers > 0 {
		xcfg := expiry.DefaultConfig()
		xcfg.Workers = e.workers
		locks := expiry.Locks{Claim: e.cache.NewLock("claim", 5*time.Second, 10*time.Second), Sweep: e.cache.NewLease("sweep", 10*time.Second)}
		x, err := expiry.New(xcfg, e.store, e.bucket, e.cache, locks,
			e.logger, prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		e.expirer, deps.Cleanup = x, x
	}
	if e.ratesInRedis {
		deps.RateRedis = cmp.Or(e.rateRedis, e.rdb)
	}
	for _, f := range e.depsHooks {
		f(&deps)
	}
	e.cfg, e.deps = cfg, deps
	e.srv = httptest.NewServer(api.NewServer(cfg, deps))
	t.Cleanup(e.srv.Close)
	return e
}

// replica is another API process over the same database, bucket and Redis, as a second replica
// behind a load balancer would be.
func (e *env) replica() *env {
	e.t.Helper()
	deps := e.deps
	deps.Registry = prometheus.NewRegistry()
	r := *e
	r.srv = httptest.NewServer(api.NewServer(e.cfg, deps))
	e.t.Cleanup(r.srv.Close)
	return &r
}

var (
	specOnce   sync.Once
	specRouter routers.Router
	specErr    error
)

// loadSpec loads openapi.yaml once per test binary and checks that it is a valid document.
func loadSpec(t testing.TB) routers.Router {
	t.Helper()
	specOnce.Do(func() {
		openapi3filter.RegisterBodyDecoder("application/problem+json", openapi3filter.JSONBodyDecoder)
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
		// /openapi.yaml is YAML text, a string to the spec; kin-openapi would parse it into an object.
		openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
		doc, err := openapi3.NewLoader().LoadFromFile("../openapi.yaml")
		if err != nil {
			specErr = err
			return
		}
		if specErr = doc.Validate(context.Background()); specErr != nil {
			return
		}
		doc.Servers = nil // match the test server's address
		specRouter, specErr = gorillamux.NewRouter(doc)
	})
	if specErr != nil {
		t.Fatalf("openapi.yaml: %v", specErr)
	}
	return specRouter
}

// response is an answer read in full.
type response struct {
	*http.Response
	body []byte
}

func (r response) text() string { return string(r.body) }

// do sends req and checks the answer against openapi.yaml: its status must be documented for the
// route, and its headers and body must match the schema.
func (e *env) do(req *http.Request) response {
	e.t.Helper()
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	if !e.noCheck {
		e.checkSpec(req, resp, body)
	}
	return response{Response: resp, body: body}
}

func (e *env) checkSpec(req *http.Request, resp *http.Response, body []byte) {
	e.t.Helper()
	route, params, err := e.spec.FindRoute(req)
	if err != nil {
		switch resp.StatusCode {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			return // a route or method the spec does not have, answered as such
		}
		e.t.Errorf("%s %s: not in openapi.yaml: %v", req.Method, req.URL.Path, err)
		return
	}
	if req.Method == http.MethodHead { // ValidateResponse skips HEAD: its status must be documented still
		if route.Operation.Responses.Status(resp.StatusCode) == nil || len(body) != 0 {
			e.t.Errorf("HEAD %s → %d with %d bytes of body: openapi.yaml documents no such answer", req.URL.Path, resp.StatusCode, len(body))
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		e.t.Errorf("%s %s → %d does not match openapi.yaml: %v\nbody: %.300s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
}

// request builds a request to the test server.
func (e *env) request(method, path string, body io.Reader, headers ...string) *http.Request {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// created is what a create answered.
type created struct {
	code, url, token string
}

// create makes a paste with curl's raw body and returns its code and token.
func (e *env) create(content string, query string) created {
	e.t.Helper()
	r := e.do(e.request(http.MethodPost, "/"+query, strings.NewReader(content)))
	if r.StatusCode != http.StatusCreated {
		e.t.Fatalf("create: got %d, want 201: %s", r.StatusCode, r.body)
	}
	lines := strings.Split(strings.TrimSpace(r.text()), "\n")
	if len(lines) != 2 {
		e.t.Fatalf("create answered %q, want two lines", r.text())
	}
	return created{code: lines[0][strings.LastIndex(lines[0], "/")+1:], url: lines[0], token: lines[1]}
}

func (e *env) get(path string, headers ...string) response {
	e.t.Helper()
	return e.do(e.request(http.MethodGet, path, nil, headers...))
}

func (e *env) delete(code, token string) response {
	e.t.Helper()
	return e.do(e.request(http.MethodDelete, "/api/v1/pastes/"+code, nil, "Authorization", "Bearer "+token))
}

// refCount returns the ref_count of the content of the paste's bytes, or -1 without a content row.
func (e *env) refCount(content string) int {
	e.t.Helper()
	var n int
	err := e.store.Pool().QueryRow(context.Background(),
		`SELECT coalesce((SELECT ref_count FROM content WHERE content_hash = sha256($1::bytea)), -1)`, []byte(content)).Scan(&n)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) count(query string, args ...any) int {
	e.t.Helper()
	return storetest.Count(e.t, e.store.Pool(), query, args...)
}
