package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"pastebin/api"
	"pastebin/blob/blobtest"
	"pastebin/cache"
	"pastebin/cache/cachetest"
	"pastebin/store"
	"pastebin/store/storetest"
)

// TestReadinessSaysOnlyWhatIsDown: with PostgreSQL, Redis and S3 unreachable, /readyz names each
// one "down" and says nothing of why (the errors name users, hosts and ports); the log has the
// reasons, once per outage, and says when a dependency is back.
func TestReadinessSaysOnlyWhatIsDown(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	dbURL, _ := url.Parse(storetest.NewDatabase(t))
	pg := blobtest.NewProxy(t, dbURL.Host)
	dbURL.Host = pg.Addr()
	st, err := store.Open(context.Background(), dbURL.String(), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	rd := blobtest.NewProxy(t, cachetest.Options(t).Addr)
	c := cache.Open(&redis.Options{Addr: rd.Addr(), MaxRetries: -1}, "pbtest:readyz:", logger)
	t.Cleanup(func() { c.Close() })
	bucket, s3srv := blobtest.Embedded(t)
	e := newEnv(t, withBucket(bucket), withLogger(logger), withDeps(func(d *api.Deps) {
		d.Store, d.Cache = st, c
	}))

	if r := e.get("/readyz"); r.StatusCode != http.StatusOK || strings.TrimSpace(r.text()) != `{"status":"ok","checks":{"postgres":"ok","redis":"ok","s3":"ok"}}` {
		t.Fatalf("readyz with everything up: %d %s", r.StatusCode, r.body)
	}
	e.wantGauges(map[string]float64{"pastebin_ready": 1, "pastebin_redis_up": 1})
	pg.Cut()
	rd.Cut()
	if err := s3srv.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := e.get("/readyz")
		if r.StatusCode != http.StatusServiceUnavailable ||
			strings.TrimSpace(r.text()) != `{"status":"unavailable","checks":{"postgres":"down","redis":"down","s3":"down"}}` {
			t.Errorf("readyz with everything down: %d %s", r.StatusCode, r.body)
		}
	}
	e.wantGauges(map[string]float64{"pastebin_ready": 0, "pastebin_redis_up": 0})
	got := logs.String()
	for _, dep := range []string{"postgres", "redis", "s3"} {
		if n := strings.Count(got, `msg="readiness: dependency down" dependency=`+dep+" err="); n != 1 {
			t.Errorf("%s went down: logged with its error %d times over two checks, want once:\n%s", dep, n, got)
		}
	}
	if s3Addr := strings.TrimPrefix(s3srv.Endpoint, "http://"); !strings.Contains(got, s3Addr) {
		t.Errorf("the log does not say why S3 is down (no %s in it):\n%s", s3Addr, got)
	}

	pg.Restore()
	rd.Restore()
	if r := e.get("/readyz"); strings.TrimSpace(r.text()) != `{"status":"unavailable","checks":{"postgres":"ok","redis":"ok","s3":"down"}}` {
		t.Errorf("readyz with S3 alone down: %d %s", r.StatusCode, r.body)
	}
	if n := strings.Count(logs.String(), `msg="readiness: dependency back"`); n != 2 {
		t.Errorf("%d lines say a dependency is back, want 2 (postgres, redis):\n%s", n, logs.String())
	}
}

// TestReadinessWhileDraining: once the process drains for shutdown, /readyz answers 503 "stopping"
// at once, while every other route is served as before: the balancer takes the replica out, and
// the requests it already sent there do not fail.
func TestReadinessWhileDraining(t *testing.T) {
	t.Parallel()
	draining := make(chan struct{})
	e := newEnv(t, withDeps(func(d *api.Deps) { d.Draining = draining }))
	if r := e.get("/readyz"); r.StatusCode != http.StatusOK {
		t.Fatalf("readyz before draining: %d %s", r.StatusCode, r.body)
	}
	close(draining)
	if r := e.get("/readyz"); r.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(r.text()) != `{"status":"stopping"}` {
		t.Errorf("readyz while draining: %d %s", r.StatusCode, r.body)
	}
	p := e.create("created while draining", "")
	if r := e.get("/raw/" + p.code); r.text() != "created while draining" {
		t.Errorf("read while draining: %d %s", r.StatusCode, r.body)
	}
}

// TestMetricsElsewhere: with the metrics on an address of their own, the API does not serve them.
func TestMetricsElsewhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *api.Config) { c.MetricsElsewhere = true }))
	if r := e.get("/metrics"); r.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics with the metrics elsewhere: %d, want 404", r.StatusCode)
	}
	rec := httptest.NewRecorder()
	api.MetricsHandler(e.deps.Registry).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "pastebin_http_requests_total") {
		t.Errorf("the metrics handler lacks the API's metrics:\n%.500s", rec.Body.String())
	}
}

// wantGauges checks the values of gauges in the server's registry.
func (e *env) wantGauges(want map[string]float64) {
	e.t.Helper()
	families, err := e.deps.Registry.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if _, ok := want[f.GetName()]; ok && len(f.GetMetric()) == 1 {
			got[f.GetName()] = f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("gauges (-want +got):\n%s", diff)
	}
}
