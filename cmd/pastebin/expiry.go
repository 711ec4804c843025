package main

import (
	"flag"
	"log/slog"
	"os"
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
	lockTTL            duration
}

func (c *expiryConfig) register(fs *flag.FlagSet) {
	d := expiry.DefaultConfig()
	c.stuckAfter, c.outboxEvery = duration(d.StuckAfter), duration(d.OutboxEvery)
	c.tombstoneRetention, c.lockTTL = duration(d.TombstoneRetention), duration(5*time.Second)
	fs.IntVar(&c.workers, "cleanup-workers", d.Workers, "cleanup workers in this process; 0 runs no cleanup here")
	fs.IntVar(&c.batchSize, "cleanup-batch-size", d.BatchSize, "expired pastes per claimed batch")
	fs.StringVar(&c.schedule, "cleanup-schedule", d.Schedule, `when cleanup runs start, UTC: a cron expression ("0 0 * * *": midnight) or "@every 1m"`)
	fs.Var(&c.stuckAfter, "cleanup-stuck-after", "the watchdog returns claims older than this to the queue")
	fs.Var(&c.lockTTL, "cleanup-lock-ttl", "time to live of the Redis lock taken around each claim")
	fs.Var(&c.outboxEvery, "outbox-interval", "how often the blob deleter drains the outbox when nothing wakes it")
	fs.StringVar(&c.sweepSchedule, "sweep-schedule", d.SweepSchedule, `when the orphan sweeper runs, UTC (cron or "@every 6h"); empty: never`)
	c.registerOrphanGrace(fs)
	fs.Var(&c.tombstoneRetention, "tombstone-retention", "deleted pastes are remembered (410, idempotent deletes) this long")
}

// registerOrphanGrace adds the grace period alone: the sweeper and fsck must agree on it.
func (c *expiryConfig) registerOrphanGrace(fs *flag.FlagSet) {
	c.orphanGrace = duration(expiry.DefaultConfig().OrphanGrace)
	fs.Var(&c.orphanGrace, "orphan-grace", "the sweeper deletes untracked blobs only when older than this")
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
		TombstoneRetention: time.Duration(c.tombstoneRetention), Host: host,
	}
	locks := expiry.Locks{
		Claim: svc.cache.NewLock("cleanup-claim", time.Duration(c.lockTTL), 2*time.Duration(c.lockTTL)),
		Sweep: svc.cache.NewLease("orphan-sweep", sweepLeaseTTL),
	}
	return expiry.New(cfg, svc.store, svc.bucket, svc.cache, locks, logger, reg)
}
