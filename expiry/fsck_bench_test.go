package expiry

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"pastebin/blob/blobtest"
	"pastebin/store/storetest"
)

// BenchmarkFsck times one full fsck of a seeded deployment whose blobs are all in the bucket:
// FSCK_PASTES pastes (20,000 unless set; 200000 or 1000000 for a real measurement), 40% of them on
// shared content. Seeding and uploading are not timed.
func BenchmarkFsck(b *testing.B) {
	pastes := 20000
	if v := os.Getenv("FSCK_PASTES"); v != "" {
		var err error
		if pastes, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	st := storetest.New(b, logger)
	bucket := blobtest.New(b)
	start := time.Now()
	keys, err := storetest.Seed(ctx, st.Pool(), storetest.SeedSpec{Pastes: pastes, Shared: 0.4, Tag: "B"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	var g errgroup.Group
	g.SetLimit(32)
	for _, k := range keys {
		g.Go(func() error { return bucket.Put(ctx, k, []byte(k)) })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d pastes, uploaded %d blobs in %s", pastes, len(keys), time.Since(start).Round(time.Second))
	t0 := time.Now()
	if _, err := st.CheckRefCounts(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("the ref_count check alone: %s", time.Since(t0).Round(time.Millisecond))
	c := NewChecker(CheckConfig{OrphanGrace: 24 * time.Hour, OutboxMaxAge: time.Hour}, st, bucket, logger)
	for b.Loop() {
		rep, err := c.Check(ctx)
		if err != nil || !rep.OK {
			b.Fatalf("fsck: %v, %v", err, rep.Problems)
		}
		b.Logf("fsck of %d pastes, %d content rows, %d blobs: %.2fs (%d suspects looked at again)",
			rep.Pastes, rep.Content, rep.Blobs.Listed, rep.Seconds, rep.Blobs.Cleared)
	}
}
