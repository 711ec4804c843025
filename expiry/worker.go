package expiry

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"pastebin/cache"
	"pastebin/store"
)

// outboxLease is how long a batch's freed blobs stay out of the blob deleter's reach: the worker
// deletes them itself right after its commit, and the outbox takes over only if it dies first.
const outboxLease = time.Minute

// maxClaimFailures is how many failed claims in a row end a worker's part of a run.
const maxClaimFailures = 3

// stageTimeout bounds finishing a batch and its S3 and Redis work. Shutdown does not cut them short:
// finishing a claimed batch costs less than leaving its rows to the watchdog.
const stageTimeout = 2 * time.Minute

// batch is a claim on its way to its finishing transaction, with the time by which that must be
// over, retries included (finishDeadline).
type batch struct {
	store.Claim
	deadline time.Time
}

// finishDeadline is when the finish of a claim that began at start must be over: half of
// StuckAfter later. The watchdog returns claims StuckAfter old to the queue, where another worker
// may take them; a finish that kept going past that would race the new claim. Bounded like this,
// a batch whose worker is alive is finished or handed back long before the watchdog looks at it,
// and one whose worker stalled past it (a pause, a partition) finds its rows another claim's and
// leaves them alone (store.FinishClaim matches the claim's own identity).
func (x *Expirer) finishDeadline(start time.Time) time.Time { return start.Add(x.cfg.StuckAfter / 2) }

// committed is a finished batch on its way to S3 and Redis.
type committed struct {
	codes    []string // every code the batch claimed: their cache entries go
	blobKeys []string // blobs the batch freed
	outbox   int64    // their row of the outbox (store.Released.Batch)
}

// work is one worker: a pipeline of three stages, so that claiming the next batch overlaps the
// finishing transaction of the current one, and S3 and Redis never hold the database up. It
// returns when a claim comes back empty (or fails repeatedly, or ctx ends) and every batch
// claimed has gone through all three stages.
func (x *Expirer) work(ctx context.Context, r *run) {
	// Unbuffered: the claim stage holds at most one batch beyond the one being finished, so a slow
	// or dead finishing transaction strands no more than two batches for the watchdog.
	claims := make(chan batch)
	done := make(chan committed, 2)
	claimCtx, stopClaims := context.WithCancel(ctx)
	defer stopClaims()
	var wg sync.WaitGroup
	wg.Go(func() { x.afterCommits(ctx, r, done) })
	wg.Go(func() { x.finishClaims(ctx, r, claims, done, stopClaims); close(done) })
	x.claimBatches(claimCtx, r, claims)
	close(claims)
	wg.Wait()
}

// claimBatches is the first stage: claim batches until one comes back empty. Each claim starts where
// this worker's last one ended (cursor): past the dead index entries of the rows cleaned before, or
// past the heap pages a claim in heap order went through. An empty claim in heap order goes on in
// expiry order from the front; an empty claim from further on looks again from the front (rows
// handed back, or returned by the watchdog, while the claims went by); only an empty claim from the
// front ends it.
func (x *Expirer) claimBatches(ctx context.Context, r *run, out chan<- batch) {
	failures := 0
	cur := cursor{heap: r.heapOrder, pages: r.heapPages}
	for ctx.Err() == nil {
		if x.pacer.wait(ctx) != nil {
			return
		}
		b, err := x.claim(ctx, cur)
		c := b.Claim
		if err != nil && ctx.Err() != nil {
			return // shutting down (or the run's finish failed): not a failure of the claim
		}
		if err != nil {
			r.fail(err)
			x.logger.ErrorContext(ctx, "cleanup claim failed", "run", r.id, "err", err)
			if failures++; failures >= maxClaimFailures {
				return
			}
			sleep(ctx, time.Duration(failures)*time.Second+jitter(500*time.Millisecond))
			continue
		}
		failures = 0
		if len(c.Codes) == 0 {
			if cur.atFront() {
				return
			}
			cur = cursor{}
			continue
		}
		cur = cur.past(c)
		r.add(cClaimed, len(c.Codes))
		x.pacer.claimedBatch(len(c.Codes))
		out <- b
	}
}

// cursor is where a worker's next claim starts: a place in the heap while the run claims in heap
// order, else an expiry.
type cursor struct {
	heap  bool
	page  store.HeapPosition
	pages uint32 // the heap's size when the run began: claims in heap order stop there
	from  time.Time
}

// past is the cursor just past claim c.
func (k cursor) past(c store.Claim) cursor {
	if k.heap {
		k.page = c.Next
	} else {
		k.from = c.Last
	}
	return k
}

// atFront reports whether the cursor is the front of the expiry order, where an empty claim means
// that nothing is left.
func (k cursor) atFront() bool { return !k.heap && k.from.IsZero() }

// finishClaims is the second stage: one transaction per batch tombstones its rows and releases
// their content (finish repairs a wrong ref_count and retries a passing failure). A batch that still
// fails goes back to the queue at once, and the worker stops claiming: whatever failed it would
// likely fail the next batch too, and the next run takes them all.
func (x *Expirer) finishClaims(ctx context.Context, r *run, in <-chan batch, out chan<- committed, stopClaims func()) {
	for b := range in {
		c := b.Claim
		rel, err := x.finish(ctx, r, b)
		if err != nil {
			r.fail(err)
			x.metrics.failures.WithLabelValues("finish").Inc()
			x.logger.ErrorContext(ctx, "cleanup batch failed; its rows go back to the queue", "run", r.id, "err", err)
			x.handBack(ctx, r, c)
			stopClaims()
			continue
		}
		x.metrics.batches.Inc()
		x.metrics.tombstoned.Add(float64(len(rel.Codes)))
		x.metrics.freed.Add(float64(rel.FreedContent))
		r.add(cBatches, 1)
		r.add(cTombstoned, len(rel.Codes))
		r.add(cFreed, rel.FreedContent)
		out <- committed{codes: c.Codes, blobKeys: rel.BlobKeys, outbox: rel.Batch}
	}
}

// afterCommits is the third stage: each committed batch's freed blobs go in one S3 call and its
// cache entries in one Redis pipeline.
func (x *Expirer) afterCommits(ctx context.Context, r *run, in <-chan committed) {
	for b := range in {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
		x.deleteBlobs(sctx, r, b.blobKeys, x.settleBatch(sctx, b.outbox))
		if err := x.cache.Forget(sctx, b.codes); err != nil {
			// Cached entries carry their expiry and are never served past it (invariant 4): a
			// failed DEL only leaves them to their TTL.
			x.metrics.failures.WithLabelValues("redis").Inc()
		}
		cancel()
	}
}

// claim takes a batch under the Redis lock, held for the claim's one round trip. Without Redis the
// claim goes ahead unlocked: the claims' advisory lock in PostgreSQL keeps it correct. Once
// begun, a claim is not cancelled by shutdown: cancelled at its commit, its outcome would be unknown.
func (x *Expirer) claim(ctx context.Context, cur cursor) (batch, error) {
	release, err := x.locks.Claim.Acquire(ctx)
	if ctx.Err() != nil {
		if err == nil {
			release()
		}
		return batch{}, ctx.Err()
	}
	switch {
	case errors.Is(err, cache.ErrLockHeld):
		// Someone held it for the whole wait: claim anyway rather than stall.
	case err != nil:
		if x.lockOutage.Failed() {
			x.logger.WarnContext(ctx, "redis unreachable: cleanup claims without the lock", "err", err)
		}
		x.metrics.unlocked.Inc()
	default:
		if x.lockOutage.Succeeded() {
			x.logger.InfoContext(ctx, "redis reachable again: cleanup claims under the lock")
		}
		defer release()
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	var c store.Claim
	if cur.heap {
		c, err = x.store.ClaimExpiredInHeapOrder(cctx, x.cfg.BatchSize, cur.page, cur.pages)
	} else {
		c, err = x.store.ClaimExpired(cctx, x.cfg.BatchSize, cur.from)
	}
	if err != nil {
		x.metrics.failures.WithLabelValues("claim").Inc()
		return batch{}, err
	}
	x.metrics.claimSeconds.Observe(time.Since(start).Seconds())
	x.metrics.claimed.Add(float64(len(c.Codes)))
	// start is before the claim's transaction began, so before the claimed_at the
	// watchdog measures from, whatever the two clocks say.
	return batch{Claim: c, deadline: x.finishDeadline(start)}, nil
}

// handBack returns a batch its worker could not finish to the queue in one statement, rather than
// leave it claimed for the watchdog's StuckAfter. If that fails too, the watchdog will.
func (x *Expirer) handBack(ctx context.Context, r *run, c store.Claim) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	n, err := x.store.ReturnClaim(sctx, c)
	if err != nil {
		x.logger.ErrorContext(ctx, "handing a batch back failed; its rows wait for the watchdog", "run", r.id, "err", err)
		return
	}
	x.logger.WarnContext(ctx, "cleanup batch handed back to the queue", "run", r.id, "pastes", n)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func jitter(max time.Duration) time.Duration { return rand.N(max) }
