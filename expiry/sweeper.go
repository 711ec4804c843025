package expiry

import (
	"context"
	"time"

	"pastebin/blob"
)

// SweepReport is what one pass of the orphan sweeper found.
type SweepReport struct {
	Scanned      int        `json:"scanned"`                 // objects listed under the blob prefix
	Orphans      int        `json:"orphans"`                 // of those, older than the grace period and named by nothing
	OrphanBytes  int64      `json:"orphan_bytes"`            // their size
	OldestOrphan *time.Time `json:"oldest_orphan,omitempty"` // the oldest one's last modification
	Deleted      int        `json:"deleted"`                 // outbox blobs deleted afterwards, orphans included
	Failed       int        `json:"failed"`
}

// Sweep is the blob-GC seed's mark and sweep, as a safety net: it lists the blob prefix, page by
// page, and asks the database which keys neither a content row nor the outbox names. Those older
// than the grace period (an upload whose create never committed, or worse) go to the outbox, which
// is then drained. Younger ones are left alone: their create may still be committing.
func (x *Expirer) Sweep(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	cutoff := time.Now().Add(-x.cfg.OrphanGrace)
	err := x.blobs.List(ctx, blob.Prefix, func(objs []blob.Object) error {
		rep.Scanned += len(objs)
		var old []string
		sizes := map[string]blob.Object{}
		for _, o := range objs {
			if o.LastModified.Before(cutoff) {
				old = append(old, o.Key)
				sizes[o.Key] = o
			}
		}
		if len(old) == 0 {
			return nil
		}
		orphans, err := x.store.UntrackedBlobKeys(ctx, old)
		if err != nil {
			return err
		}
		for _, k := range orphans {
			o := sizes[k]
			rep.OrphanBytes += o.Size
			if rep.OldestOrphan == nil || o.LastModified.Before(*rep.OldestOrphan) {
				rep.OldestOrphan = &o.LastModified
			}
		}
		rep.Orphans += len(orphans)
		if len(orphans) == 0 {
			return nil
		}
		return x.store.EnqueueBlobDeletions(ctx, orphans)
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
