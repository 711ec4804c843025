package expiry

import (
	"context"
	"time"

	"pastebin/blob"
	"pastebin/store"
)

// OrphanStats sums up orphan blobs: objects under blob.Prefix that neither a content row nor the
// outbox names, older than the grace period.
type OrphanStats struct {
	Orphans      int        `json:"orphans"`
	OrphanBytes  int64      `json:"orphan_bytes"`
	OldestOrphan *time.Time `json:"oldest_orphan,omitempty"` // the oldest one's last modification
}

func (s *OrphanStats) add(orphans []blob.Object) {
	for _, o := range orphans {
		s.Orphans++
		s.OrphanBytes += o.Size
		if s.OldestOrphan == nil || o.LastModified.Before(*s.OldestOrphan) {
			t := o.LastModified
			s.OldestOrphan = &t
		}
	}
}

func (s *OrphanStats) merge(o OrphanStats) {
	s.Orphans += o.Orphans
	s.OrphanBytes += o.OrphanBytes
	if o.OldestOrphan != nil && (s.OldestOrphan == nil || o.OldestOrphan.Before(*s.OldestOrphan)) {
		s.OldestOrphan = o.OldestOrphan
	}
}

// untracked returns the objects among objs, just listed, that neither a content row nor the outbox
// names, split at cutoff. The older ones are orphans: an upload whose create never committed, or
// worse. The younger ones may be uploads whose create is still committing, so nobody may touch them
// yet (blob-GC seed). The sweeper and fsck share this rule so that they never disagree on a blob.
func untracked(ctx context.Context, st *store.Store, objs []blob.Object, cutoff time.Time) (old, young []blob.Object, err error) {
	if len(objs) == 0 {
		return nil, nil, nil
	}
	names, err := st.UntrackedBlobKeys(ctx, keysOf(objs))
	if err != nil {
		return nil, nil, err
	}
	unnamed := make(map[string]bool, len(names))
	for _, k := range names {
		unnamed[k] = true
	}
	for _, o := range objs {
		switch {
		case !unnamed[o.Key]:
		case o.LastModified.Before(cutoff):
			old = append(old, o)
		default:
			young = append(young, o)
		}
	}
	return old, young, nil
}

func keysOf(objs []blob.Object) []string {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}
