package main

import (
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/expiry"
)

// expiryConfig is the cleanup subsystem's configuration, shared by serve, cleanup and sweep.
type expiryConfig struct {
	workers            int
	batchSize          int
	schedule           string
	stuckAfter         duration
	outboxEvery        duration
	sweepSchedule      string
	orphanGrace        duration
	tombstoneRetention duration
	auditRetention     lifetime
	lockTTL            duration
	pacing             expiry.Pacing
}

func (c *expiryConfig) register(fs *flag.FlagSet) {
	d := expiry.DefaultConfig()
	c.stuckAfter, c.outboxEvery = duration(d.StuckAfter), duration(d.OutboxEvery)
	c.tombstoneRetention, c.lockTTL = duration(d.TombstoneRetention), duration(5*time.Second)
	c.auditRetention = lifetime(d.AuditRetention)
	fs.IntVar(&c.workers, "cleanup-workers", d.Workers, "cleanup workers in this process; 0 runs no cleanup here")
	fs.IntVar(&c.batchSize, "cleanup-batch-size", d.BatchSize, "expired pastes per claimed batch")
	fs.StringVar(&c.schedule, "cleanup-schedule", d.Schedule, `when cleanup runs start, UTC: a cron expression ("0 0 * * *": midnight) or "@every 1m"`)
	fs.Var(&c.stuckAfter, "cleanup-stuck-after", "the watchdog returns claims older than this to the queue; a batch's finish, retries included, ends within half of it")
	fs.Var(&c.lockTTL, "cleanup-lock-ttl", "time to live of the Redis lock taken around each claim")
	fs.Var(&c.outboxEvery, "outbox-interval", "how often the blob deleter drains the outbox when nothing wakes it")
	fs.StringVar(&c.sweepSchedule, "sweep-schedule", d.SweepSchedule, `when the orphan sweeper runs, UTC (cron or "@every 6h"); empty: never`)
	c.registerOrphanGrace(fs)
	fs.Var(&c.tombstoneRetention, "tombstone-retention", "deleted pastes are remembered (410, idempotent deletes) this long")
	fs.Var(&c.auditRetention, "audit-retention", `admin audit entries are kept this long, then purged by the cleanup run; "never" keeps them`)
	c.registerPacing(fs, d.Pacing)
}

// registerPacing adds the settings of the drain's pace (docs/operations.md, "Pacing the drain").
func (c *expiryConfig) registerPacing(fs *flag.FlagSet, d expiry.Pacing) {
	c.pacing = d
	fs.StringVar(&c.pacing.Mode, "cleanup-pacing", d.Mode, `"auto": slow the drain while its finishing transactions are slower than -cleanup-pacing-target; "off": only -cleanup-max-rate`)
	fs.Var((*pastesPerSecond)(&c.pacing.MaxRate), "cleanup-max-rate", "most expired pastes per second this process's drain claims, in every pacing mode; empty or 0: no limit")
	fs.Var((*pastesPerSecond)(&c.pacing.MinRate), "cleanup-min-rate", "automatic pacing never slows this process's drain below this many pastes per second")
	fs.DurationVar(&c.pacing.Target, "cleanup-pacing-target", d.Target, "automatic pacing keeps the finishing transaction of a full batch (pastebin_cleanup_finish_seconds) under this")
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

// sweepLeaseTTL is how long a sweeper that died keeps others from sweeping; a live one refreshes it.
const sweepLeaseTTL = 5 * time.Minute

// newExpirer builds the cleanup subsystem over svc.
func (c *expiryConfig) newExpirer(svc *services, logger *slog.Logger, reg prometheus.Registerer) (*expiry.Expirer, error) {
	host, _ := os.Hostname()
	cfg := expiry.Config{
		Workers: c.workers, BatchSize: c.batchSize, Schedule: c.schedule, StuckAfter: time.Duration(c.stuckAfter),
		WatchdogEvery: min(time.Minute, time.Duration(c.stuckAfter)/2), OutboxEvery: time.Duration(c.outboxEvery),
		SweepSchedule: c.sweepSchedule, OrphanGrace: time.Duration(c.orphanGrace),
		TombstoneRetention: time.Duration(c.tombstoneRetention), AuditRetention: time.Duration(c.auditRetention),
		Host: host, Pacing: c.pacing,
	}
	locks := expiry.Locks{
		Claim: svc.cache.NewLock("cleanup-claim", time.Duration(c.lockTTL), 2*time.Duration(c.lockTTL)),
		Sweep: svc.cache.NewLease("orphan-sweep", sweepLeaseTTL),
	}
	return expiry.New(cfg, svc.store, svc.bucket, svc.cache, locks, logger, reg)
}
