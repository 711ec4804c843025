package expiry

import (
	"context"
	"errors"
	"time"

	"pastebin/blob"
)

// outboxClaimLease is how long the blob deleter holds the keys it took before they are due again.
const outboxClaimLease = 5 * time.Minute

// deleteBlobs deletes blobs whose keys the outbox holds for the caller (leased to it, or a cleanup
// batch's own row), then has settle clear the ones S3 confirmed and keep the others with back-off.
func (x *Expirer) deleteBlobs(ctx context.Context, r *run, keys []string, settle func(res blob.DeleteResult) error) (deleted, failed int) {
	if len(keys) == 0 {
		return 0, 0
	}
	start := time.Now()
	res, err := x.blobs.Delete(ctx, keys)
	x.metrics.blobDeleteSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		x.metrics.failures.WithLabelValues("s3").Inc()
		if r != nil {
			r.fail(err)
		}
	}
	if err := settle(res); err != nil {
		// S3 deleted some; the outbox will delete them again later, which is harmless.
		x.logger.WarnContext(ctx, "outbox not settled", "err", err)
	}
	x.metrics.blobsDeleted.Add(float64(len(res.Deleted)))
	x.metrics.blobsFailed.Add(float64(len(res.Failed)))
	if r != nil {
		r.add(cBlobsDeleted, len(res.Deleted))
		r.add(cBlobsFailed, len(res.Failed))
	}
	return len(res.Deleted), len(res.Failed)
}

// settleKeys settles keys that are rows of blob_deletions each.
func (x *Expirer) settleKeys(ctx context.Context) func(blob.DeleteResult) error {
	return func(res blob.DeleteResult) error {
		return errors.Join(x.store.ClearBlobDeletions(ctx, res.Deleted), x.store.DeferBlobDeletions(ctx, res.Failed))
	}
}

// settleBatch settles the keys of a cleanup batch's row of the outbox.
func (x *Expirer) settleBatch(ctx context.Context, id int64) func(blob.DeleteResult) error {
	return func(res blob.DeleteResult) error { return x.store.SettleBlobBatch(ctx, id, res.Failed) }
}

// DrainOutbox deletes every due blob in the outbox, a batch of at most 1000 per S3 call, and
// returns how many were deleted and how many failed and stay for a later attempt.
func (x *Expirer) DrainOutbox(ctx context.Context) (deleted, failed int) {
	return x.drainOutbox(ctx, nil)
}

func (x *Expirer) drainOutbox(ctx context.Context, r *run) (deleted, failed int) {
	for ctx.Err() == nil {
		keys, err := x.store.ClaimBlobDeletions(ctx, x.cfg.BatchSize, outboxClaimLease)
		if err != nil {
			x.logger.ErrorContext(ctx, "outbox claim failed", "err", err)
			x.metrics.failures.WithLabelValues("outbox").Inc()
			return deleted, failed
		}
		if len(keys) == 0 {
			return deleted, failed
		}
		d, f := x.deleteBlobs(ctx, r, keys, x.settleKeys(ctx))
		deleted, failed = deleted+d, failed+f
		if f > 0 {
			return deleted, failed // S3 is in trouble: back off rather than spin
		}
	}
	return deleted, failed
}

// runBlobDeleter drains the outbox when kicked (an owner delete freed a blob) and periodically.
func (x *Expirer) runBlobDeleter(ctx context.Context) {
	t := time.NewTicker(x.cfg.OutboxEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-x.kick:
		}
		if d, f := x.drainOutbox(ctx, nil); d+f > 0 {
			x.logger.InfoContext(ctx, "outbox drained", "blobs_deleted", d, "blobs_failed", f)
		}
	}
}
