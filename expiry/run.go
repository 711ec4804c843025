package expiry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"pastebin/store"
)

// run is one cleanup run in progress: its counters, shared by its workers.
type run struct {
	id             int64
	heapOrder      bool   // claims start in the heap's order: the backlog is a large share of the table
	heapPages      uint32 // the heap's size when the run began, where claims in heap order stop
	done           chan struct{}
	counts         [countFields]atomic.Int64
	mu             sync.Mutex
	lastErr        string
	repairedHashes []store.HexHash // the first store.MaxRepairedHashes content rows recounted
}

// The counters of a run, in store.RunCounts order.
const (
	cReset = iota
	cClaimed
	cTombstoned
	cFreed
	cBlobsDeleted
	cBlobsFailed
	cPurged
	cBatches
	cErrors
	cRetried
	cRepaired
	countFields
)

func (r *run) add(field int, n int) { r.counts[field].Add(int64(n)) }

func (r *run) fail(err error) {
	r.add(cErrors, 1)
	r.mu.Lock()
	r.lastErr = err.Error()
	r.mu.Unlock()
}

// addRepaired records content rows whose ref_count a batch found wrong and recounted.
func (r *run) addRepaired(fixed []store.RefRepair) {
	r.add(cRepaired, len(fixed))
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range fixed {
		if len(r.repairedHashes) < store.MaxRepairedHashes {
			r.repairedHashes = append(r.repairedHashes, f.Hash)
		}
	}
}

func (r *run) snapshot(p store.RunPacing) store.RunState {
	c := store.RunCounts{
		ResetStuck: r.counts[cReset].Load(), Claimed: r.counts[cClaimed].Load(),
		Tombstoned: r.counts[cTombstoned].Load(), ContentFreed: r.counts[cFreed].Load(),
		BlobsDeleted: r.counts[cBlobsDeleted].Load(), BlobsFailed: r.counts[cBlobsFailed].Load(),
		Purged: r.counts[cPurged].Load(), Batches: r.counts[cBatches].Load(), Errors: r.counts[cErrors].Load(),
		BatchesRetried: r.counts[cRetried].Load(), ContentRepaired: r.counts[cRepaired].Load(),
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return store.RunState{RunCounts: c, Pacing: p, RepairedHashes: append([]store.HexHash{}, r.repairedHashes...), LastError: r.lastErr}
}

// Start begins a cleanup run in the background and returns its id at once. If a run is already in
// progress in this process, it returns that run's id instead of starting a second. An admin's
// request (audit not nil) is recorded in the audit log, with the run it started or joined.
func (x *Expirer) Start(trigger string, audit *store.AuditRecord) (int64, error) {
	r, started, err := x.begin(trigger, audit)
	if err != nil || !started {
		return idOf(r), err
	}
	x.mu.Lock()
	ctx := x.baseCtx
	x.mu.Unlock()
	go x.execute(ctx, r, nil)
	return r.id, nil
}

// RunOnce runs one cleanup to the end and returns its report: the watchdog, then every worker
// claiming and finishing batches until a claim comes back empty, then the outbox drained and the
// tombstones purged. progress, if not nil, is called with the counters as the run goes.
func (x *Expirer) RunOnce(ctx context.Context, trigger string, progress ...func(store.RunState)) (store.Run, error) {
	r, started, err := x.begin(trigger, nil)
	if err != nil {
		return store.Run{}, err
	}
	if !started {
		<-r.done // another caller's run: wait for it rather than run twice
	} else {
		var p func(store.RunState)
		if len(progress) > 0 {
			p = progress[0]
		}
		x.execute(ctx, r, p)
	}
	return x.store.Run(context.WithoutCancel(ctx), r.id)
}

func idOf(r *run) int64 {
	if r == nil {
		return 0
	}
	return r.id
}

// begin records a new run, or returns the one in progress (started false).
func (x *Expirer) begin(trigger string, audit *store.AuditRecord) (*run, bool, error) {
	if x.cfg.Workers == 0 {
		return nil, false, ErrDisabled
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.current != nil {
		if audit != nil {
			return x.current, false, x.store.RecordJoinedRun(context.Background(), *audit, x.current.id)
		}
		return x.current, false, nil
	}
	id, err := x.store.StartRun(context.Background(), trigger, x.cfg.Host, x.cfg.Workers, audit)
	if err != nil {
		return nil, false, err
	}
	x.current = &run{id: id, done: make(chan struct{})}
	return x.current, true, nil
}

// execute runs r's phases, writing its report as it goes and at the end.
func (x *Expirer) execute(ctx context.Context, r *run, progress func(store.RunState)) {
	start := time.Now()
	x.logger.InfoContext(ctx, "cleanup run started", "run", r.id, "workers", x.cfg.Workers)
	stopPacing := x.pacer.start(ctx)
	stopReports := x.reportEvery(ctx, r, time.Second, progress)

	r.add(cReset, int(x.resetStuck(ctx)))
	r.heapOrder, r.heapPages = x.claimInHeapOrder(ctx, r)
	var wg sync.WaitGroup
	for i := 0; i < x.cfg.Workers; i++ {
		wg.Go(func() { x.work(ctx, r) })
	}
	wg.Wait()
	stopPacing() // no longer draining: another process takes the controller over, if any drains
	x.drainOutbox(ctx, r)
	x.purge(ctx, r)

	stopReports()
	st := r.snapshot(x.pacer.state())
	counts := st.RunCounts
	if ctx.Err() != nil && st.LastError == "" {
		st.LastError = "interrupted: " + context.Cause(ctx).Error()
	}
	if err := x.store.UpdateRun(context.WithoutCancel(ctx), r.id, st, true); err != nil {
		x.logger.ErrorContext(ctx, "cleanup report not saved", "run", r.id, "err", err)
	}
	if progress != nil {
		progress(st)
	}
	x.metrics.runs.Inc()
	if st.LastError != "" {
		x.metrics.runsFailed.Inc()
	}
	x.logger.InfoContext(ctx, "cleanup run finished", "run", r.id, "duration", time.Since(start).String(),
		"claimed", counts.Claimed, "tombstoned", counts.Tombstoned, "content_freed", counts.ContentFreed,
		"blobs_deleted", counts.BlobsDeleted, "batches", counts.Batches, "errors", counts.Errors,
		"batches_retried", counts.BatchesRetried, "content_repaired", counts.ContentRepaired)
	x.mu.Lock()
	x.current = nil
	x.mu.Unlock()
	close(r.done)
}

// A run claims in the heap's order while its backlog is at least heapOrderShare of the table and
// heapOrderBatches batches: with a few expired rows on every page, a batch then reads a few dozen
// pages in a row rather than one row on each of a thousand pages. A nightly run of one day's
// expirations keeps the expiry order, whose index hands it the expired rows and nothing else.
const (
	heapOrderShare   = 0.05
	heapOrderBatches = 100
)

// claimInHeapOrder decides how r's workers claim, from the planner's estimate of the backlog, and
// how far into the heap: its size now.
func (x *Expirer) claimInHeapOrder(ctx context.Context, r *run) (bool, uint32) {
	expired, rows, err := x.store.BacklogEstimate(ctx)
	if err != nil {
		x.logger.WarnContext(ctx, "backlog not estimated: claims in expiry order", "run", r.id, "err", err)
		return false, 0
	}
	if rows <= 0 || expired < heapOrderShare*rows || expired < heapOrderBatches*float64(x.cfg.BatchSize) {
		return false, 0
	}
	pages, err := x.store.HeapPages(ctx)
	if err != nil {
		x.logger.WarnContext(ctx, "heap not measured: claims in expiry order", "run", r.id, "err", err)
		return false, 0
	}
	x.logger.InfoContext(ctx, "large backlog: claims in heap order first", "run", r.id,
		"expired_estimate", int64(expired), "table_rows_estimate", int64(rows), "heap_pages", pages)
	return true, pages
}

// reportEvery saves r's counters (and heartbeat) every period until the returned stop is called.
func (x *Expirer) reportEvery(ctx context.Context, r *run, period time.Duration, progress func(store.RunState)) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				st := r.snapshot(x.pacer.state())
				if progress != nil {
					progress(st)
				}
				if err := x.store.UpdateRun(ctx, r.id, st, false); err != nil && !errors.Is(err, context.Canceled) {
					x.logger.WarnContext(ctx, "cleanup progress not saved", "run", r.id, "err", err)
				}
			}
		}
	})
	return func() { close(stop); wg.Wait() }
}

// waitForRun waits until no run is in progress in this process (for shutdown).
func (x *Expirer) waitForRun() {
	x.mu.Lock()
	r := x.current
	x.mu.Unlock()
	if r != nil {
		<-r.done
	}
}

// purge deletes tombstones past their retention, Idempotency-Key records past their window, and
// admin audit entries past theirs (unless they are kept forever), and erases the contact addresses
// of abuse reports past theirs.
func (x *Expirer) purge(ctx context.Context, r *run) {
	steps := []func(context.Context, int) (int64, error){
		func(ctx context.Context, n int) (int64, error) {
			return x.store.PurgeTombstones(ctx, x.cfg.TombstoneRetention, n)
		},
		x.store.PurgeIdempotencyKeys,
	}
	if x.cfg.AuditRetention > 0 {
		steps = append(steps, func(ctx context.Context, n int) (int64, error) {
			return x.store.PurgeAudit(ctx, x.cfg.AuditRetention, n)
		})
	}
	if x.cfg.ReportRetention > 0 {
		steps = append(steps, func(ctx context.Context, n int) (int64, error) {
			return x.store.PurgeReportContacts(ctx, x.cfg.ReportRetention, n)
		})
	}
	for _, step := range steps {
		for ctx.Err() == nil {
			n, err := step(ctx, x.cfg.BatchSize)
			if err != nil {
				r.fail(err)
				x.metrics.failures.WithLabelValues("purge").Inc()
				break
			}
			r.add(cPurged, int(n))
			if n < int64(x.cfg.BatchSize) {
				break
			}
		}
	}
}
