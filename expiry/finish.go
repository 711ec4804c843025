package expiry

import (
	"context"
	"errors"
	"time"

	"github.com/sethvargo/go-retry"

	"pastebin/store"
)

// finishRetries bounds how often a batch's finishing transaction runs again after a passing failure
// (connection lost, deadlock, timeout): with the back-off below, about half a minute in all, after
// which the batch goes back to the queue.
const finishRetries = 4

// finishBackoff is the wait before each retry: 1 s, doubling, with jitter so that workers that failed
// together (a database restart) do not come back together.
func finishBackoff() retry.Backoff {
	return retry.WithMaxRetries(finishRetries, retry.WithJitterPercent(25, retry.NewExponential(time.Second)))
}

// finish runs a batch's finishing transaction until it commits. A batch refused on a guard of
// ref_count (its CHECK or the foreign key) has its content recounted under row locks, as fsck
// --repair does, and runs again at once: one wrong count no longer strands a thousand innocent
// pastes. A batch that failed for a passing reason runs again after a back-off, within this run,
// rather than going back to the queue for the next scheduled run. Either way the transaction is the
// same one: a retry after a commit whose answer was lost changes nothing (invariant 6).
func (x *Expirer) finish(ctx context.Context, r *run, c store.Claim) (store.Released, error) {
	backoff := finishBackoff()
	repaired := false
	for {
		rel, err := x.finishOnce(ctx, c)
		switch {
		case err == nil:
			return rel, nil
		case errors.Is(err, store.ErrRefCount) && !repaired:
			x.metrics.failures.WithLabelValues("constraint").Inc()
			x.logger.WarnContext(ctx, "cleanup batch refused on a wrong ref_count; recounting its content",
				"run", r.id, "err", err)
			if err = x.repairBatch(ctx, r, c); err == nil {
				repaired = true
				continue
			}
		}
		delay, stop := backoff.Next()
		if stop || !store.Transient(err) || ctx.Err() != nil {
			return store.Released{}, err
		}
		x.metrics.retries.Inc()
		r.add(cRetried, 1)
		x.logger.WarnContext(ctx, "cleanup batch failed for a passing reason; retrying", "run", r.id,
			"in", delay.Round(time.Millisecond).String(), "err", err)
		if sleep(ctx, delay); ctx.Err() != nil {
			return store.Released{}, err // shutting down: the batch waits for the watchdog
		}
	}
}

// finishOnce is one finishing transaction. Shutdown does not cut it short (stageTimeout does), and
// its latency is the pacer's signal.
func (x *Expirer) finishOnce(ctx context.Context, c store.Claim) (store.Released, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	start := time.Now()
	rel, err := x.store.FinishClaim(sctx, c, outboxLease)
	if err == nil || store.Transient(err) {
		x.pacer.observe(len(c.Codes), time.Since(start))
	}
	if err == nil {
		x.metrics.finishSeconds.Observe(time.Since(start).Seconds())
	}
	return rel, err
}

// repairBatch recounts the references of the batch's content (store.RepairRefCounts, the code fsck
// --repair runs) and reports the rows it fixed, by content hash.
func (x *Expirer) repairBatch(ctx context.Context, r *run, c store.Claim) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	fixed, err := x.store.RepairRefCounts(sctx, c.Hashes)
	if err != nil {
		return err
	}
	for _, f := range fixed {
		x.logger.WarnContext(ctx, "cleanup repaired a wrong ref_count", "run", r.id,
			"content_hash", f.Hash.String(), "was", f.Was, "now", f.Now)
	}
	x.metrics.repaired.Add(float64(len(fixed)))
	r.addRepaired(fixed)
	return nil
}
