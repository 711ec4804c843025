package api

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"pastebin/api/problem"
)

// handleHealthz answers while the process is alive.
func handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		problem.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

// readiness is the answer of /readyz.
type readiness struct {
	Status string            `json:"status"`           // ok, degraded, unavailable or stopping
	Checks map[string]string `json:"checks,omitempty"` // postgres, redis, s3: "ok" or "down"; none while stopping
}

// handleReadyz checks PostgreSQL, Redis and S3 at once. Without PostgreSQL or S3 nothing works, so
// the answer is 503. Without Redis the service is slower but correct, so it stays ready (200,
// "degraded"): taking every replica out of the load balancer for a cache outage would be worse. Once
// the process drains for shutdown it answers 503 "stopping" without checking anything, so the
// balancer stops sending it requests while it still serves them. Each check says "ok" or "down" and
// nothing more: its error names users, hosts and ports, so it goes to the log instead.
func handleReadyz(deps Deps) http.Handler {
	pings := readinessChecks(deps)
	outages := newOutages(deps.Logger, pings)
	ready := registerReadiness(deps)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if isClosed(deps.Draining) {
			ready.Set(0)
			problem.WriteJSON(w, http.StatusServiceUnavailable, readiness{Status: "stopping"})
			return
		}
		res := readiness{Status: "ok", Checks: outages.note(r.Context(), checkReadiness(r.Context(), pings))}
		status := http.StatusOK
		if res.Checks["redis"] != "ok" {
			res.Status = "degraded"
		}
		if res.Checks["postgres"] != "ok" || res.Checks["s3"] != "ok" {
			res.Status, status = "unavailable", http.StatusServiceUnavailable
		}
		ready.Set(boolGauge(status == http.StatusOK))
		problem.WriteJSON(w, status, res)
	})
}

// registerReadiness registers pastebin_ready, which /readyz sets, and pastebin_redis_up, which the
// cache's own view of Redis sets (the balancer's /readyz checks keep it fresh when nothing else
// talks to Redis). Alerts read both (deploy/prometheus/alerts.yml).
func registerReadiness(deps Deps) prometheus.Gauge {
	ready := prometheus.NewGauge(prometheus.GaugeOpts{Name: "pastebin_ready",
		Help: "1 when this replica's last readiness check (/readyz) passed; 0 when it failed or the replica is stopping."})
	redisUp := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pastebin_redis_up",
		Help: "1 while this replica reaches Redis; 0 while it runs without cache, shared rate limits and cleanup lock."},
		func() float64 { return boolGauge(deps.Cache.Reachable()) })
	deps.Registry.MustRegister(ready, redisUp)
	return ready
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// outages remembers which services are down, so that /readyz logs why once when one goes down and
// once when it is back, however often the balancer asks.
type outages struct {
	logger *slog.Logger
	down   map[string]*atomic.Bool
}

func newOutages(logger *slog.Logger, pings map[string]func(context.Context) error) *outages {
	o := &outages{logger: logger, down: map[string]*atomic.Bool{}}
	for name := range pings {
		o.down[name] = &atomic.Bool{}
	}
	return o
}

// note logs the changes in checks ("ok" or the error, by name) and returns them as "ok" or "down".
func (o *outages) note(ctx context.Context, checks map[string]string) map[string]string {
	out := make(map[string]string, len(checks))
	for name, msg := range checks {
		out[name] = "ok"
		switch down := o.down[name]; {
		case msg != "ok" && !down.Swap(true):
			o.logger.WarnContext(ctx, "readiness: dependency down", "dependency", name, "err", msg)
		case msg == "ok" && down.Swap(false):
			o.logger.InfoContext(ctx, "readiness: dependency back", "dependency", name)
		}
		if msg != "ok" {
			out[name] = "down"
		}
	}
	return out
}

// isClosed reports whether c is closed; a nil channel never is.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// MetricsHandler serves reg's metrics in the Prometheus text format: at /metrics of the API, or on
// an address of its own (PASTEBIN_METRICS_ADDR).
func MetricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// readinessChecks are the services a replica needs, by name, and how to reach each.
func readinessChecks(deps Deps) map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"postgres": deps.Store.Ping, "redis": deps.Cache.Ping, "s3": deps.Bucket.Ping,
	}
}

// checkReadiness pings every service at once: "ok" or the error, by name.
func checkReadiness(ctx context.Context, pings map[string]func(context.Context) error) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	checks := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, ping := range pings {
		wg.Go(func() {
			msg := "ok"
			if err := ping(ctx); err != nil {
				msg = err.Error()
			}
			mu.Lock()
			checks[name] = msg
			mu.Unlock()
		})
	}
	wg.Wait()
	return checks
}
