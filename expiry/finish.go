package expiry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sethvargo/go-retry"

	"pastebin/store"
)

// finishRetries bounds how often a batch's finishing transaction runs again after a passing failure
// (connection lost, deadlock, timeout): with the back-off below, about twenty seconds of waiting in
// all. The batch's deadline (finishDeadline) bounds the whole, attempts included; past either, the
// batch goes back to the queue.
const finishRetries = 4

// finishBackoff is the wait before each retry: 1 s, doubling, with jitter so that workers that failed
// together (a database restart) do not come back together.
func finishBackoff() retry.Backoff {
	return retry.WithMaxRetries(finishRetries, retry.WithJitterPercent(25, retry.NewExponential(time.Second)))
}

// errPastDeadline says a batch's finish ran out of its time (finishDeadline).
var errPastDeadline = errors.New("the batch's finish ran past its deadline, half of StuckAfter after its claim")

// finish runs a batch's finishing transaction until it commits. A batch refused on a guard of
// ref_count (its CHECK or the foreign key) has its content recounted under row locks, as fsck
// --repair does, and runs again at once: one wrong count no longer strands a thousand innocent
// pastes. A batch that failed for a passing reason runs again after a back-off, within this run,
// rather than going back to the queue for the next scheduled run. Either way the transaction is the
// same one: a retry after a commit whose answer was lost changes nothing (invariant 6). Nothing of
// it runs past the batch's deadline: the watchdog may hand its rows to another worker later.
func (x *Expirer) finish(ctx context.Context, r *run, b batch) (store.Released, error) {
	backoff := finishBackoff()
	repaired := false
	for {
		rel, err := x.finishOnce(ctx, b)
		switch {
		case err == nil:
			return rel, nil
		case errors.Is(err, store.ErrRefCount) && !repaired:
			x.metrics.failures.WithLabelValues("constraint").Inc()
			x.logger.WarnContext(ctx, "cleanup batch refused on a wrong ref_count; recounting its content",
				"run", r.id, "err", err)
			if err = x.repairBatch(ctx, r, b); err == nil {
				repaired = true
				continue
			}
		}
		delay, stop := backoff.Next()
		if stop || !store.Transient(err) || ctx.Err() != nil {
			return store.Released{}, err
		}
		if !time.Now().Add(delay).Before(b.deadline) {
			return store.Released{}, fmt.Errorf("%w: %w", errPastDeadline, err)
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

// stageContext is the context of one step of a batch's finish: shutdown does not cut it short,
// stageTimeout and the batch's deadline do.
func stageContext(ctx context.Context, b batch) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(stageTimeout)
	if b.deadline.Before(deadline) {
		deadline = b.deadline
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

// finishOnce is one finishing transaction. Its latency is the pacer's signal.
func (x *Expirer) finishOnce(ctx context.Context, b batch) (store.Released, error) {
	if !time.Now().Before(b.deadline) {
		return store.Released{}, errPastDeadline
	}
	sctx, cancel := stageContext(ctx, b)
	defer cancel()
	start := time.Now()
	rel, err := x.store.FinishClaim(sctx, b.Claim, outboxLease)
	if err == nil || store.Transient(err) {
		x.pacer.observe(len(b.Codes), time.Since(start))
	}
	if err == nil {
		x.metrics.finishSeconds.Observe(time.Since(start).Seconds())
	}
	return rel, err
}

// repairBatch recounts the references of the batch's content (store.RepairRefCounts, the code fsck
// --repair runs) and reports the rows it fixed, by content hash.
func (x *Expirer) repairBatch(ctx context.Context, r *run, b batch) error {
	sctx, cancel := stageContext(ctx, b)
	defer cancel()
	fixed, err := x.store.RepairRefCounts(sctx, b.Hashes)
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
