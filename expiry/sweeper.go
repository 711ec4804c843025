package expiry

import (
	"context"
	"errors"
	"time"

	"pastebin/blob"
	"pastebin/cache"
)

// ErrSweepRunning says another process is sweeping: one sweep at a time lists the bucket.
var ErrSweepRunning = errors.New("another process is sweeping the bucket")

// SweepReport is what one pass of the orphan sweeper found.
type SweepReport struct {
	Scanned     int `json:"scanned"` // objects listed under the blob prefix
	OrphanStats     // of those, older than the grace period and named by nothing
	Deleted     int `json:"deleted"` // outbox blobs deleted afterwards, orphans included
	Failed      int `json:"failed"`
}

// Sweep is the blob-GC seed's mark and sweep, as a safety net: it lists the blob prefix, page by
// page, and asks the database which keys neither a content row nor the outbox names. Those older
// than the grace period (an upload whose create never committed, or worse) go to the outbox, which
// is then drained. Younger ones are left alone: their create may still be committing.
func (x *Expirer) Sweep(ctx context.Context) (SweepReport, error) {
	release, err := x.locks.Sweep.Acquire(ctx)
	switch {
	case errors.Is(err, cache.ErrLockHeld):
		return SweepReport{}, ErrSweepRunning
	case err != nil:
		// Two sweeps at once are only wasteful: each key's fate is decided by the database.
		x.logger.WarnContext(ctx, "redis unreachable: orphan sweep runs without its lease", "err", err)
	default:
		defer release()
	}
	return x.sweep(ctx)
}

func (x *Expirer) sweep(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	cutoff := time.Now().Add(-x.cfg.OrphanGrace)
	err := x.blobs.List(ctx, blob.Prefix, func(objs []blob.Object) error {
		rep.Scanned += len(objs)
		orphans, _, err := untracked(ctx, x.store, objs, cutoff)
		if err != nil || len(orphans) == 0 {
			return err
		}
		rep.add(orphans)
		// A listed key the blob deleter removed since (and cleared from the outbox) comes back here:
		// queued again, its delete is a no-op.
		return x.store.EnqueueBlobDeletions(ctx, keysOf(orphans))
	})
	if err != nil {
		x.metrics.failures.WithLabelValues("sweep").Inc()
		return rep, err
	}
	rep.Deleted, rep.Failed = x.drainOutbox(ctx, nil)
	x.metrics.orphans.Add(float64(rep.Orphans))
	level := x.logger.InfoContext
	if rep.Orphans > 0 {
		level = x.logger.WarnContext // orphans are rare; each is worth a look
	}
	level(ctx, "orphan sweep finished", "scanned", rep.Scanned, "orphans", rep.Orphans,
		"orphan_bytes", rep.OrphanBytes, "blobs_deleted", rep.Deleted, "blobs_failed", rep.Failed)
	return rep, nil
}
