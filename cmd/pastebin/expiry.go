package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/cache"
	"pastebin/expiry"
)

// expiryConfig is the cleanup subsystem's configuration, shared by serve, cleanup and sweep.
type expiryConfig struct {
	workers            int
	batchSize          int
	schedule           string
	stuckAfter         duration
	outboxEvery        duration
	sweepSchedule      scheduleOrOff
	orphanGrace        duration
	tombstoneRetention duration
	auditRetention     lifetime
	reportRetention    duration
	lockTTL            duration
	pacing             expiry.Pacing
	pacingTarget       string // no longer used; set, it is warned about
}

func (c *expiryConfig) register(fs *flag.FlagSet) {
	d := expiry.DefaultConfig()
	c.stuckAfter, c.outboxEvery = duration(d.StuckAfter), duration(d.OutboxEvery)
	c.tombstoneRetention, c.lockTTL = duration(d.TombstoneRetention), duration(5*time.Second)
	c.auditRetention, c.reportRetention = lifetime(d.AuditRetention), duration(d.ReportRetention)
	fs.IntVar(&c.workers, "cleanup-workers", d.Workers, "cleanup workers in this process; 0 runs no cleanup here")
	fs.IntVar(&c.batchSize, "cleanup-batch-size", d.BatchSize, "expired pastes per claimed batch")
	fs.StringVar(&c.schedule, "cleanup-schedule", d.Schedule, `when cleanup runs start, UTC: a cron expression ("0 0 * * *": midnight) or "@every 1m"`)
	fs.Var(&c.stuckAfter, "cleanup-stuck-after", "the watchdog returns claims older than this to the queue; a batch's finish, retries included, ends within half of it")
	fs.Var(&c.lockTTL, "cleanup-lock-ttl", "time to live of the Redis lock taken around each claim")
	fs.Var(&c.outboxEvery, "outbox-interval", "how often the blob deleter drains the outbox when nothing wakes it")
	c.sweepSchedule = scheduleOrOff(d.SweepSchedule)
	fs.Var(&c.sweepSchedule, "sweep-schedule", `when the orphan sweeper runs, UTC (cron or "@every 6h"); "off": never`)
	c.registerOrphanGrace(fs)
	fs.Var(&c.tombstoneRetention, "tombstone-retention", "deleted pastes are remembered (410, idempotent deletes) this long")
	fs.Var(&c.auditRetention, "audit-retention", `admin audit entries are kept this long, then purged by the cleanup run; "never" keeps them`)
	fs.Var(&c.reportRetention, "report-retention", "abuse reports' contact addresses are erased this long after the report was filed, by the cleanup run")
	c.registerPacing(fs, d.Pacing)
}

// registerPacing adds the settings of the drain's pace (docs/operations.md, "Pacing the drain").
// The rates are the whole deployment's: every replica draws from one budget in Redis.
func (c *expiryConfig) registerPacing(fs *flag.FlagSet, d expiry.Pacing) {
	c.pacing = d
	fs.StringVar(&c.pacing.Mode, "cleanup-pacing", d.Mode, `"auto": the drain runs as fast as keeps the users' p99 within -cleanup-latency-budget; "off": only -cleanup-max-rate`)
	fs.Var((*pastesPerSecond)(&c.pacing.MaxRate), "cleanup-max-rate", "most expired pastes per second the whole deployment's drain claims, every replica together, in every pacing mode; empty or 0: no limit")
	fs.Var((*pastesPerSecond)(&c.pacing.MinRate), "cleanup-min-rate", "automatic pacing never slows the whole deployment's drain below this many pastes per second")
	fs.Float64Var(&c.pacing.LatencyBudget, "cleanup-latency-budget", d.LatencyBudget, "automatic pacing keeps the users' p99 under this many times their level (read before the drain, and again every 20 minutes of it)")
	fs.StringVar(&c.pacingTarget, "cleanup-pacing-target", "", "no longer used, and warned about at start-up: the pacing steers by the users' latency (-cleanup-latency-budget)")
}

// warnPacing says at start-up what changed for settings an operator set before the pacing became
// the deployment's: a rate each process kept is now the whole deployment's, so replicas that set
// 2000 each now drain at 2000 together; the pacing target is no longer read.
func (c *expiryConfig) warnPacing(logger *slog.Logger) {
	d := expiry.DefaultPacing()
	if c.pacing.MaxRate > 0 {
		logger.Warn("PASTEBIN_CLEANUP_MAX_RATE is the whole deployment's rate now, every replica together, no longer each process's",
			"max_rate", c.pacing.MaxRate)
	}
	if c.pacing.MinRate != d.MinRate {
		logger.Warn("PASTEBIN_CLEANUP_MIN_RATE is the whole deployment's floor now, every replica together, no longer each process's",
			"min_rate", c.pacing.MinRate)
	}
	if c.pacingTarget != "" {
		logger.Warn("PASTEBIN_CLEANUP_PACING_TARGET is no longer read: the pacing keeps the users' p99 within PASTEBIN_CLEANUP_LATENCY_BUDGET",
			"latency_budget", c.pacing.LatencyBudget)
	}
}

// pastesPerSecond is a flag for a rate of pastes: a number, 0 or empty for none.
type pastesPerSecond float64

func (r *pastesPerSecond) String() string {
	if *r == 0 {
		return ""
	}
	return strconv.FormatFloat(float64(*r), 'f', -1, 64)
}

func (r *pastesPerSecond) Set(v string) error {
	if v = strings.TrimSpace(v); v == "" {
		*r = 0
		return nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("not a number of pastes per second such as 5000")
	}
	*r = pastesPerSecond(f)
	return nil
}

// registerOrphanGrace adds the grace period alone: the sweeper and fsck must agree on it.
func (c *expiryConfig) registerOrphanGrace(fs *flag.FlagSet) {
	c.orphanGrace = duration(expiry.DefaultConfig().OrphanGrace)
	fs.Var(&c.orphanGrace, "orphan-grace", "the sweeper deletes untracked blobs only when older than this; the upload of a create that failed waits this long in the outbox")
}

// sweepLeaseTTL is how long a sweeper that died keeps others from sweeping, `pastebin sweep`
// included; a live one refreshes it every third of it, however long its listing takes.
const sweepLeaseTTL = time.Minute

// controllerLeaseTTL is how long the pacing's controller in a process that died keeps others from
// taking it over: the last pace it published holds meanwhile.
const controllerLeaseTTL = 10 * time.Second

// drainersTTL is how long a draining process counts in the roster after its last heartbeat.
const drainersTTL = 10 * time.Second

// paceTTL is how long the controller's pace outlives its last update in Redis: longer than the
// span before a drain that its level is read over (expiry, baselineSpan), so a drain begun within
// it knows when the last one was and leaves it out.
const paceTTL = 12 * time.Minute

// newExpirer builds the cleanup subsystem over svc, pacing its drain with every replica through
// Redis; users, when not nil, are this process's users' latencies for the pacing's signal.
func (c *expiryConfig) newExpirer(svc *services, users *cache.LatencyWindows, logger *slog.Logger, reg prometheus.Registerer) (*expiry.Expirer, error) {
	host, _ := os.Hostname()
	cfg := expiry.Config{
		Workers: c.workers, BatchSize: c.batchSize, Schedule: c.schedule, StuckAfter: time.Duration(c.stuckAfter),
		WatchdogEvery: min(time.Minute, time.Duration(c.stuckAfter)/2), OutboxEvery: time.Duration(c.outboxEvery),
		SweepSchedule: string(c.sweepSchedule), OrphanGrace: time.Duration(c.orphanGrace),
		TombstoneRetention: time.Duration(c.tombstoneRetention), AuditRetention: time.Duration(c.auditRetention),
		ReportRetention: time.Duration(c.reportRetention),
		Host:            host, Pacing: c.pacing,
	}
	locks := expiry.Locks{
		Claim: svc.cache.NewLock("cleanup-claim", time.Duration(c.lockTTL), 2*time.Duration(c.lockTTL)),
		Sweep: svc.cache.NewLease("orphan-sweep", sweepLeaseTTL),
	}
	if users == nil {
		users = svc.cache.NewLatencyWindows(usersLatency) // read only: this process serves nobody
	}
	d := expiry.Deployment{
		Budget:     budget{svc.cache.NewLimiter("cleanup")},
		Controller: svc.cache.NewLease("cleanup-controller", controllerLeaseTTL),
		Pace:       svc.cache.NewRecord("cleanup-pace", paceTTL),
		Drainers:   svc.cache.NewRoster("cleanup-drainers", drainersTTL),
		Claimed:    svc.cache.NewCounter("cleanup-claimed"),
		Users:      users,
	}
	return expiry.New(cfg, svc.store, svc.bucket, svc.cache, locks, logger, reg, expiry.WithDeployment(d))
}

// usersLatency names the latency windows of the users' requests in Redis.
const usersLatency = "users"

// budget is the deployment's token bucket for the drain: cache's GCRA limiter, in Redis. While
// Redis is away it reserves nothing and says so (cache.ErrNotShared), and the pacer draws at its
// share of the rate instead of the whole rate that every process would allow itself.
type budget struct{ l *cache.Limiter }

func (b budget) Reserve(ctx context.Context, key string, perSecond float64, burst, n int, most time.Duration) (bool, time.Duration, error) {
	limit := cache.Limit{Tokens: max(1, int(math.Round(perSecond))), Per: time.Second, Burst: burst}
	r, err := b.l.Reserve(ctx, key, limit, n, most)
	return r.Taken, r.Wait, err
}
