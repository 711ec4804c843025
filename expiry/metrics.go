package expiry

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the cleanup subsystem's Prometheus metrics.
type metrics struct {
	runs, runsFailed, batches, claimed, tombstoned       prometheus.Counter
	freed                                                prometheus.Counter
	blobsDeleted, blobsFailed, reset, orphans            prometheus.Counter
	unlocked, retries, repaired, pacedSeconds            prometheus.Counter
	failures, slowdowns                                  *prometheus.CounterVec
	rateLimit, pacingSignal, pacingAim, pacingController prometheus.Gauge
	pacingReason                                         *prometheus.GaugeVec
	claimSeconds, finishSeconds, blobDeleteSeconds       prometheus.Histogram
	backlog, backlogAge, inProgress, outboxDepth         prometheus.Gauge
	outboxAge                                            prometheus.Gauge
	reportsOpen, reportsAge                              prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, x *Expirer) *metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "pastebin_cleanup_" + name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: "pastebin_cleanup_" + name, Help: help})
	}
	// Fine below 100 ms, where a healthy batch's stages fall (a claim's p99 should stay under 50 ms),
	// so that a p99 read from the buckets is within a few milliseconds.
	latency := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pastebin_cleanup_" + name, Help: help,
			Buckets: []float64{.0025, .005, .01, .015, .02, .025, .03, .04, .05, .06, .08, .1, .15, .2, .3, .5, 1, 2.5, 5, 10}})
	}
	m := &metrics{
		runs:              counter("runs_total", "Cleanup runs finished."),
		runsFailed:        counter("runs_failed_total", "Cleanup runs that finished with an error."),
		batches:           counter("batches_total", "Batches committed."),
		claimed:           counter("claimed_total", "Expired pastes claimed."),
		tombstoned:        counter("tombstoned_total", "Expired pastes turned into tombstones."),
		freed:             counter("content_freed_total", "Content rows deleted at zero references."),
		blobsDeleted:      counter("blobs_deleted_total", "Blobs deleted from S3."),
		blobsFailed:       counter("blob_delete_failures_total", "Blob deletes that failed and wait in the outbox."),
		reset:             counter("watchdog_resets_total", "Stuck pastes the watchdog returned to the queue."),
		orphans:           counter("orphans_found_total", "Orphan blobs the sweeper found."),
		unlocked:          counter("unlocked_claims_total", "Claims made without the Redis lock (Redis unreachable)."),
		retries:           counter("batch_retries_total", "Finishing transactions run again after a passing failure (connection lost, deadlock, timeout)."),
		repaired:          counter("content_repaired_total", "Content rows whose wrong ref_count broke a batch, recounted under row locks."),
		pacedSeconds:      counter("paced_seconds_total", "Time workers waited for the pacer before a claim, summed."),
		failures:          prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pastebin_cleanup_failures_total", Help: "Cleanup failures by stage; constraint: a batch refused on a wrong ref_count (then repaired)."}, []string{"stage"}),
		slowdowns:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pastebin_cleanup_paced_total", Help: "Times the automatic pacing cut the deployment's rate, by reason, counted by the process that ran the controller."}, []string{"reason"}),
		rateLimit:         gauge("rate_limit", "Pastes per second the whole deployment's drain may claim now (every replica draws from one budget); 0: no limit."),
		pacingSignal:      gauge("pacing_signal_ratio", "Automatic pacing: the signal the controller steers by, a latency over its level (1: unchanged)."),
		pacingAim:         gauge("pacing_aim_ratio", "Automatic pacing: where the controller holds its signal: the users' p99 under the budget by their signal's measured spread, or the finishing latency at the budget (its own is the budget squared)."),
		pacingController:  gauge("pacing_controller", "1 while this process runs the controller that sets the deployment's rate."),
		pacingReason:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pastebin_cleanup_pacing_reason", Help: "1 for why the deployment's drain runs at its rate now: max_rate, min_rate, rising, at_budget, over_budget, no_signal or reading_level; none of them: no limit."}, []string{"reason"}),
		claimSeconds:      latency("claim_seconds", "Time to claim one batch."),
		finishSeconds:     latency("finish_seconds", "Time of the transaction finishing one batch."),
		blobDeleteSeconds: latency("blob_delete_seconds", "Time of one S3 multi-object delete (DeleteObjects) of freed blobs."),
		backlog:           gauge("backlog", "Pastes past their expiry not cleaned yet."),
		backlogAge:        gauge("backlog_oldest_age_seconds", "How long ago the oldest uncleaned paste expired."),
		inProgress:        gauge("in_progress", "Pastes claimed and not finished."),
		outboxDepth:       gauge("outbox", "Blobs waiting in the outbox for deletion."),
		outboxAge:         gauge("outbox_oldest_age_seconds", "How long the oldest blob in the outbox has waited for deletion."),
		reportsOpen:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "pastebin_reports_open", Help: "Abuse reports no operator has closed yet."}),
		reportsAge:        prometheus.NewGauge(prometheus.GaugeOpts{Name: "pastebin_reports_oldest_open_age_seconds", Help: "How long the oldest open abuse report has waited; 0: none is open."}),
	}
	// Every stage's series from the start: an alert on increase() misses the first failure of a
	// series that appears at 1. "constraint": a batch the database refused (a wrong ref_count).
	for _, stage := range []string{"claim", "finish", "constraint", "redis", "s3", "outbox", "watchdog", "purge", "sweep"} {
		m.failures.WithLabelValues(stage)
	}
	m.slowdowns.WithLabelValues(reasonOverBudget)
	reg.MustRegister(m.runs, m.runsFailed, m.batches, m.claimed, m.tombstoned, m.freed, m.blobsDeleted, m.blobsFailed,
		m.reset, m.orphans, m.unlocked, m.retries, m.repaired, m.pacedSeconds, m.failures, m.slowdowns,
		m.rateLimit, m.pacingSignal, m.pacingAim, m.pacingController, m.pacingReason, m.claimSeconds, m.finishSeconds, m.blobDeleteSeconds,
		m.backlog, m.backlogAge, m.inProgress, m.outboxDepth, m.outboxAge, m.reportsOpen, m.reportsAge)
	return m
}

// backlogEvery is how often the backlog gauges are refreshed: in the background, so a scrape never
// waits on a count over a large backlog.
const backlogEvery = 15 * time.Second

// backlogShare bounds the time the refreshes take to a sixtieth: on a heavy day the count walks
// millions of index entries (seconds of a core; the heavy-day bench saw users' p99 jump with each),
// and every replica counts.
const backlogShare = 60

func (x *Expirer) runBacklogGauges(ctx context.Context) {
	for {
		start := time.Now()
		x.refreshBacklog(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(backlogEvery, backlogShare*time.Since(start))):
		}
	}
}

func (x *Expirer) refreshBacklog(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	x.refreshReports(ctx)
	b, err := x.store.Backlog(ctx)
	if err != nil {
		return
	}
	x.metrics.backlog.Set(float64(b.Expired))
	x.metrics.inProgress.Set(float64(b.InProgress))
	x.metrics.outboxDepth.Set(float64(b.Outbox))
	age := 0.0
	if !b.Oldest.IsZero() {
		age = time.Since(b.Oldest).Seconds()
	}
	x.metrics.backlogAge.Set(age)
	outboxAge := 0.0
	if !b.OutboxOldest.IsZero() {
		outboxAge = time.Since(b.OutboxOldest).Seconds()
	}
	x.metrics.outboxAge.Set(outboxAge)
}

// refreshReports sets the open reports' gauges, from their partial index (a few rows: reports are
// closed). They ride on the backlog's refresh, which every serving process runs.
func (x *Expirer) refreshReports(ctx context.Context) {
	b, err := x.store.OpenReports(ctx)
	if err != nil {
		return
	}
	x.metrics.reportsOpen.Set(float64(b.Open))
	age := 0.0
	if !b.Oldest.IsZero() {
		age = time.Since(b.Oldest).Seconds()
	}
	x.metrics.reportsAge.Set(age)
}
