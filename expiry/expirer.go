// Package expiry runs the distributed batch cleanup of expired pastes (docs/design.md, "Expiry"):
// cleanup workers, their schedule, the watchdog for stuck rows, the blob deleter that
// drains the outbox, the orphan sweeper, the tombstone purge, and the run reports operators watch;
// and the checker behind pastebin fsck, which shares the sweeper's idea of an orphan.
package expiry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"pastebin/blob"
	"pastebin/cache"
	"pastebin/store"
)

// Config sets how cleanup runs.
type Config struct {
	Workers            int           // cleanup workers in this process; 0 runs no cleanup here
	BatchSize          int           // pastes per claim; at most blob.MaxDeleteKeys blobs per S3 call anyway
	Schedule           string        // cron expression or @every; runs start on it (UTC)
	StuckAfter         time.Duration // the watchdog resets claims older than this; a finish ends within half of it
	WatchdogEvery      time.Duration
	OutboxEvery        time.Duration // the blob deleter's period when nobody kicks it
	SweepSchedule      string        // the orphan sweeper's cron expression or @every; empty: never
	OrphanGrace        time.Duration // the sweeper leaves younger objects alone
	TombstoneRetention time.Duration
	AuditRetention     time.Duration // admin audit entries older than this are purged; 0: kept forever
	ReportRetention    time.Duration // abuse reports' contact addresses older than this are erased; 0: kept
	Host               string        // names this process in run reports
	Pacing             Pacing
}

// DefaultConfig is the configuration docs/configuration.md documents.
func DefaultConfig() Config {
	return Config{
		Workers: 2, BatchSize: 1000, Schedule: "0 0 * * *", StuckAfter: 10 * time.Minute,
		WatchdogEvery: time.Minute, OutboxEvery: 30 * time.Second, SweepSchedule: "30 3 * * *",
		OrphanGrace: store.DefaultOrphanGrace, TombstoneRetention: 30 * 24 * time.Hour, AuditRetention: 365 * 24 * time.Hour,
		ReportRetention: 90 * 24 * time.Hour,
		Pacing:          DefaultPacing(),
	}
}

// blobStore is what cleanup needs of S3.
type blobStore interface {
	Delete(ctx context.Context, keys []string) (blob.DeleteResult, error)
	List(ctx context.Context, prefix string, fn func([]blob.Object) error) error
}

// cacheForgetter drops cached pastes, in one pipeline per call.
type cacheForgetter interface {
	Forget(ctx context.Context, codes []string) error
}

// lock is a Redis lock. Acquire returns cache.ErrLockHeld when another worker kept it for the whole
// wait, and any other error when Redis is unreachable.
type lock interface {
	Acquire(ctx context.Context) (func(), error)
}

// Locks are the subsystem's Redis locks: Claim, held around each claim (cache.Lock), and Sweep,
// held for a whole orphan sweep (cache.Lease), so that one replica at a time lists the bucket.
// Correctness rests on neither: without Redis, claims and sweeps go ahead unlocked.
type Locks struct {
	Claim lock
	Sweep lock
}

// ErrDisabled says this process runs no cleanup workers.
var ErrDisabled = errors.New("cleanup is disabled in this process (0 workers)")

// Expirer is the cleanup subsystem of one process.
type Expirer struct {
	store   *store.Store
	blobs   blobStore
	cache   cacheForgetter
	locks   Locks
	cfg     Config
	logger  *slog.Logger
	metrics *metrics
	pacer   *pacer

	deployment Deployment

	schedule      cron.Schedule
	sweepSchedule cron.Schedule

	kick       chan struct{} // wakes the blob deleter
	mu         sync.Mutex
	current    *run // the run in progress in this process, if any
	baseCtx    context.Context
	lockOutage cache.Outage // Redis unreachable for the lock: logged once per outage
}

// Option is an optional part of the cleanup subsystem.
type Option func(*Expirer)

// WithDeployment paces the drain with every replica through d (Redis): one budget for them all,
// one controller at a time. Without it, the process paces its drain alone.
func WithDeployment(d Deployment) Option { return func(x *Expirer) { x.deployment = d } }

// New returns the cleanup subsystem. It registers its metrics on reg.
func New(cfg Config, st *store.Store, blobs blobStore, c cacheForgetter, locks Locks,
	logger *slog.Logger, reg prometheus.Registerer, opts ...Option) (*Expirer, error) {
	if cfg.BatchSize <= 0 || cfg.Workers < 0 {
		return nil, fmt.Errorf("cleanup: batch size %d and workers %d must be positive", cfg.BatchSize, cfg.Workers)
	}
	if cfg.StuckAfter <= 0 {
		return nil, fmt.Errorf("cleanup: stuck-after %s must be positive", cfg.StuckAfter)
	}
	if err := cfg.Pacing.validate(); err != nil {
		return nil, fmt.Errorf("cleanup: %w", err)
	}
	sched, err := parseSchedule(cfg.Schedule)
	if err != nil {
		return nil, fmt.Errorf("cleanup schedule: %w", err)
	}
	var sweep cron.Schedule
	if cfg.SweepSchedule != "" {
		if sweep, err = parseSchedule(cfg.SweepSchedule); err != nil {
			return nil, fmt.Errorf("sweep schedule: %w", err)
		}
	}
	x := &Expirer{
		store: st, blobs: blobs, cache: c, locks: locks, cfg: cfg, logger: logger,
		schedule: sched, sweepSchedule: sweep, kick: make(chan struct{}, 1), baseCtx: context.Background(),
	}
	for _, o := range opts {
		o(x)
	}
	x.metrics = newMetrics(reg, x)
	x.pacer = newPacer(cfg.Pacing, cfg.BatchSize, cfg.Workers, x.deployment, memberName(cfg.Host), x.metrics, logger)
	return x, nil
}

// parseSchedule reads a standard five-field cron expression or a descriptor such as @daily or
// @every 1m. Times are UTC.
func parseSchedule(spec string) (cron.Schedule, error) {
	return cron.ParseStandard("CRON_TZ=UTC " + spec)
}

// Kick tells the blob deleter that blobs wait in the outbox, so an owner delete's blob does not
// wait for the next period. It never blocks.
func (x *Expirer) Kick() {
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

// Run runs the schedules until ctx ends: cleanup runs, the watchdog, the blob deleter, the orphan
// sweeper and the backlog gauges. It returns nil on shutdown.
func (x *Expirer) Run(ctx context.Context) error {
	x.mu.Lock()
	x.baseCtx = ctx
	x.mu.Unlock()
	var wg sync.WaitGroup
	loops := []func(context.Context){x.runBlobDeleter, x.runBacklogGauges}
	if x.cfg.Workers > 0 {
		loops = append(loops, x.runCleanupSchedule, x.runWatchdog)
	}
	if x.sweepSchedule != nil {
		loops = append(loops, x.runSweepSchedule)
	}
	for _, loop := range loops {
		wg.Go(func() { loop(ctx) })
	}
	wg.Wait()
	x.waitForRun()
	return nil
}

// every calls fn at the times sched gives, until ctx ends.
func every(ctx context.Context, sched cron.Schedule, fn func(context.Context)) {
	for {
		wait := time.Until(sched.Next(time.Now()))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
			fn(ctx)
		}
	}
}

func (x *Expirer) runCleanupSchedule(ctx context.Context) {
	every(ctx, x.schedule, func(ctx context.Context) {
		if _, err := x.RunOnce(ctx, "schedule"); err != nil {
			x.logger.ErrorContext(ctx, "scheduled cleanup failed", "err", err)
		}
	})
}

func (x *Expirer) runWatchdog(ctx context.Context) {
	every(ctx, cron.Every(x.cfg.WatchdogEvery), func(ctx context.Context) { x.resetStuck(ctx) })
}

func (x *Expirer) runSweepSchedule(ctx context.Context) {
	every(ctx, x.sweepSchedule, func(ctx context.Context) {
		_, err := x.Sweep(ctx)
		switch {
		case errors.Is(err, ErrSweepRunning):
			x.logger.InfoContext(ctx, "orphan sweep skipped: another replica is sweeping")
		case err != nil:
			x.logger.ErrorContext(ctx, "orphan sweep failed", "err", err)
		}
	})
}

// resetStuck runs the watchdog until no stuck row is left and returns how many rows it reset.
func (x *Expirer) resetStuck(ctx context.Context) int64 {
	var total int64
	for ctx.Err() == nil {
		n, err := x.store.ResetStuck(ctx, x.cfg.StuckAfter, x.cfg.BatchSize)
		if err != nil {
			x.logger.ErrorContext(ctx, "watchdog failed", "err", err)
			x.metrics.failures.WithLabelValues("watchdog").Inc()
			break
		}
		total += n
		if n < int64(x.cfg.BatchSize) {
			break
		}
	}
	if total > 0 {
		x.metrics.reset.Add(float64(total))
		x.logger.WarnContext(ctx, "watchdog returned stuck pastes to the queue", "pastes", total,
			"stuck_after", x.cfg.StuckAfter.String())
	}
	return total
}

// Workers is the number of cleanup workers this process runs; 0 means it runs no cleanup.
func (x *Expirer) Workers() int { return x.cfg.Workers }

// memberName names this process among the processes draining: its host, its pid and a random
// suffix, so that two processes of one host, or a restarted one, never share a name.
func memberName(host string) string {
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), rand.Text()[:8])
}
