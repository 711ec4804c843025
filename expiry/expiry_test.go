package expiry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"pastebin/blob/blobtest"
	"pastebin/cache/cachetest"
	"pastebin/store"
	"pastebin/store/storetest"
)

// TestCleanupStory is the cleanup seed's story: A (expired) and B (live) share content. A run turns A
// into a tombstone and leaves the content to B; once B expires too, the content row and the blob go,
// and Redis holds neither.
func TestCleanupStory(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, testCleanupStory)
}

func testCleanupStory(t *testing.T, kind cachetest.Kind) {
	e := newEnvOf(t, kind)
	a := e.paste("shared text", time.Now().Add(-time.Minute))
	b := e.paste("shared text", time.Now().Add(time.Hour))
	x := e.expirer(2)

	r := e.runOnce(x)
	if r.Claimed != 1 || r.Tombstoned != 1 || r.ContentFreed != 0 {
		t.Errorf("first run: %+v, want 1 claimed, 1 tombstoned, nothing freed", r.RunCounts)
	}
	var gone *store.GoneError
	if _, err := e.store.Paste(context.Background(), a); !errors.As(err, &gone) || gone.Reason != store.ReasonExpired {
		t.Errorf("A after the run: %v, want gone as expired (410)", err)
	}
	if n := e.count(`SELECT ref_count FROM content`); n != 1 {
		t.Errorf("ref_count %d, want 1", n)
	}
	if keys := blobtest.Keys(t, e.bucket); len(keys) != 1 {
		t.Errorf("bucket %v, want the blob still there", keys)
	}
	if _, err := e.store.Paste(context.Background(), b); err != nil {
		t.Errorf("B after the run: %v", err)
	}
	if cached := e.cachedCodes(); len(cached) != 1 || cached[0] != b {
		t.Errorf("cached codes %v, want only B", cached)
	}

	e.exec(`UPDATE pastes SET expires_at = now() - interval '1 second' WHERE short_code = $1`, b)
	r = e.runOnce(x)
	if r.Tombstoned != 1 || r.ContentFreed != 1 || r.BlobsDeleted != 1 {
		t.Errorf("second run: %+v, want 1 tombstoned, 1 content freed, 1 blob deleted", r.RunCounts)
	}
	if n := e.count(`SELECT count(*) FROM content`); n != 0 {
		t.Errorf("content rows %d, want 0", n)
	}
	if keys := blobtest.Keys(t, e.bucket); len(keys) != 0 {
		t.Errorf("bucket %v, want empty", keys)
	}
	if cached := e.cachedCodes(); len(cached) != 0 {
		t.Errorf("Redis still holds %v", cached)
	}
	a2 := e.audit()
	a2.Consistent(t)
	if len(a2.Outbox) != 0 {
		t.Errorf("outbox %v, want drained", a2.Outbox)
	}
}

// TestRunReports checks that a run's report adds up to what the database shows, and that runs are
// listed newest first.
func TestRunReports(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, testRunReports)
}

func testRunReports(t *testing.T, kind cachetest.Kind) {
	e := newEnvOf(t, kind)
	e.seed(storetest.SeedSpec{Pastes: 3000, Expired: 2000, Shared: 0.4, Tag: "R"})
	freedBefore := e.count(`SELECT count(*) FROM content`)
	x := e.expirer(3, func(c *Config) { c.BatchSize = 250 })
	r := e.runOnce(x)
	deleted := int64(e.count(`SELECT count(*) FROM tombstones`))
	freed := int64(freedBefore - e.count(`SELECT count(*) FROM content`))
	if r.Claimed != 2000 || r.Tombstoned != deleted || deleted != 2000 {
		t.Errorf("report claimed %d tombstoned %d; database shows %d tombstones, want 2000", r.Claimed, r.Tombstoned, deleted)
	}
	if r.ContentFreed != freed || r.BlobsDeleted != freed || freed == 0 {
		t.Errorf("report freed %d content rows and %d blobs; database shows %d freed", r.ContentFreed, r.BlobsDeleted, freed)
	}
	if r.Batches < 8 || r.Errors != 0 || r.Workers != 3 || r.FinishedAt == nil {
		t.Errorf("report %+v", r)
	}
	e.audit().Consistent(t)
	r2 := e.runOnce(x)
	runs, err := e.store.Runs(context.Background(), 10)
	if err != nil || len(runs) != 2 || runs[0].ID != r2.ID || runs[1].ID != r.ID {
		t.Errorf("runs %v (%v), want the two runs newest first", runs, err)
	}
	if r2.Claimed != 0 {
		t.Errorf("a second run claimed %d, want 0", r2.Claimed)
	}
}

// TestWatchdog: claims older than the timeout are taken back, their pastes claimed again and
// finished once. The worker that claimed them and stalled comes back in the worst order: after the
// watchdog returned its rows and another worker claimed them, before that worker finishes. Its
// finish and its hand-back must change nothing of the other claim, which then finishes every row
// itself: one tombstone and one release per paste, the counts as the database shows them.
func TestWatchdog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 500, Expired: 300, Shared: 0.5, Tag: "W"})
	ctx := context.Background()
	stalled, err := e.store.ClaimExpired(ctx, 120, time.Time{}) // a worker that stalls after this
	if err != nil || len(stalled.Codes) != 120 {
		t.Fatalf("claim: %d rows, %v", len(stalled.Codes), err)
	}
	x := e.expirer(2, func(c *Config) { c.StuckAfter = time.Hour })
	r := e.runOnce(x)
	if r.ResetStuck != 0 || r.Tombstoned != 180 {
		t.Fatalf("run with fresh claims: reset %d, tombstoned %d; want 0 and 180", r.ResetStuck, r.Tombstoned)
	}

	x.cfg.StuckAfter = time.Nanosecond // the claim is older than that: the watchdog returns it
	if n := x.resetStuck(ctx); n != 120 {
		t.Fatalf("the watchdog reset %d rows, want the stalled claim's 120", n)
	}
	current, err := e.store.ClaimExpired(ctx, 1000, time.Time{}) // another worker takes them
	if err != nil || !sameCodes(current.Codes, stalled.Codes) {
		t.Fatalf("the second claim took %d rows (%v), want the 120 the watchdog returned", len(current.Codes), err)
	}

	rel, err := e.store.FinishClaim(ctx, stalled, 0)
	if err != nil || len(rel.Codes) != 0 || rel.FreedContent != 0 {
		t.Errorf("the stalled worker's late finish tombstoned %d pastes and freed %d content rows (%v); want nothing: they are another claim's",
			len(rel.Codes), rel.FreedContent, err)
	}
	if n, err := e.store.ReturnClaim(ctx, stalled); err != nil || n != 0 {
		t.Errorf("the stalled worker's late hand-back returned %d rows (%v), want 0", n, err)
	}
	if n := e.count(`SELECT coalesce(sum(cardinality(codes)), 0) FROM cleanup_claims`); n != 120 {
		t.Errorf("%d rows in the second claim after the late worker, want its 120", n)
	}
	rel, err = e.store.FinishClaim(ctx, current, 0)
	if err != nil || len(rel.Codes) != 120 {
		t.Errorf("the second claim's finish tombstoned %d pastes (%v), want all 120", len(rel.Codes), err)
	}
	if n := e.count(`SELECT count(*) FROM tombstones`); n != 300 {
		t.Errorf("tombstones %d, want 300", n)
	}
	x.DrainOutbox(ctx)
	e.audit().Consistent(t)
}

func sameCodes(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// TestWithoutRedis: with Redis unreachable, cleanup is still exactly right, and says it runs without
// the lock.
func TestWithoutRedis(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 2000, Expired: 1500, Shared: 0.4, Tag: "N"})
	// The cache and the lock point at a port where nothing listens.
	down := newDeadRedis(t, e)
	x := e.expirer(3)
	x.cache, x.locks = down, testLocks(down)
	r := e.runOnce(x)
	if r.Tombstoned != 1500 {
		t.Errorf("tombstoned %d, want 1500", r.Tombstoned)
	}
	if !strings.Contains(e.logs.String(), "cleanup claims without the lock") {
		t.Errorf("no log line says the claims ran without the lock:\n%s", e.logs.String())
	}
	e.audit().Consistent(t)
}

// TestS3DownDuringRun: with S3 stopped mid-run the database stays consistent and the freed blobs
// wait in the outbox; once S3 is back the outbox drains and nothing leaks.
func TestS3DownDuringRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 2000, Expired: 2000, Shared: 0.3, Tag: "D"})
	proxy := blobtest.NewProxy(t, strings.TrimPrefix(e.s3.Endpoint, "http://"))
	cfg := e.s3
	cfg.Endpoint, cfg.Timeout = "http://"+proxy.Addr(), 2*time.Second
	x := e.expirer(2, func(c *Config) { c.BatchSize = 200 })
	x.blobs = openBucket(t, cfg)
	proxy.Cut()
	r, err := x.RunOnce(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if r.Tombstoned != 2000 || r.BlobsDeleted != 0 || r.BlobsFailed == 0 {
		t.Errorf("run with S3 down: %+v; want every paste tombstoned and the blobs failed", r.RunCounts)
	}
	a := e.audit()
	if len(a.RefMismatches) > 0 || len(a.UntrackedBlobs) > 0 || len(a.Outbox) != int(r.ContentFreed) {
		t.Errorf("with S3 down: %d ref mismatches, %d untracked, outbox %d; want 0, 0 and %d",
			len(a.RefMismatches), len(a.UntrackedBlobs), len(a.Outbox), r.ContentFreed)
	}
	proxy.Restore()
	e.exec(`UPDATE blob_deletions SET next_attempt = now()`) // the back-off has passed
	if deleted, failed := x.DrainOutbox(context.Background()); deleted != int(r.ContentFreed) || failed != 0 {
		t.Errorf("drain after S3 is back: %d deleted, %d failed; want %d and 0", deleted, failed, r.ContentFreed)
	}
	a = e.audit()
	a.Consistent(t)
	if len(a.Outbox) != 0 {
		t.Errorf("outbox %d after the drain", len(a.Outbox))
	}
}

// TestOrphanSweeper: an upload no content row or outbox entry names is deleted once older than the
// grace period, and never before; tracked blobs are never touched.
func TestOrphanSweeper(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	live := e.paste("kept", time.Now().Add(time.Hour))
	_ = live
	ctx := context.Background()
	for _, k := range []string{"blobs/orphan/1", "blobs/orphan/2"} {
		if err := e.bucket.Put(ctx, k, []byte("abandoned upload")); err != nil {
			t.Fatal(err)
		}
	}
	x := e.expirer(1, func(c *Config) { c.OrphanGrace = time.Hour })
	rep, err := x.Sweep(ctx)
	if err != nil || rep.Scanned != 3 || rep.Orphans != 0 {
		t.Fatalf("sweep within the grace period: %+v, %v; want 3 scanned and no orphans", rep, err)
	}
	x.cfg.OrphanGrace = -time.Minute // as if a day had passed
	rep, err = x.Sweep(ctx)
	if err != nil || rep.Orphans != 2 || rep.Deleted != 2 || rep.OrphanBytes != 32 {
		t.Fatalf("sweep past the grace period: %+v, %v; want the 2 orphans (32 bytes) deleted", rep, err)
	}
	a := e.audit()
	a.Consistent(t)
	if keys := blobtest.Keys(t, e.bucket); len(keys) != 1 {
		t.Errorf("bucket %v, want only the live paste's blob", keys)
	}
}

// TestOneSweepAtATime: while one replica sweeps, another replica's sweep (its schedule fires at
// the same hour) lists nothing and says so; once the first is done, the second may sweep. Without
// Redis the sweep goes ahead without the lease.
func TestOneSweepAtATime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.paste("kept", time.Now().Add(time.Hour))
	first, second := e.expirer(1), e.expirer(1)
	release, err := first.locks.Sweep.Acquire(ctx) // first is sweeping
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := second.Sweep(ctx); !errors.Is(err, ErrSweepRunning) || rep.Scanned != 0 {
		t.Fatalf("a second sweep while one runs: %+v, %v; want ErrSweepRunning and nothing listed", rep, err)
	}
	release()
	if rep, err := second.Sweep(ctx); err != nil || rep.Scanned != 1 {
		t.Fatalf("the sweep after the first finished: %+v, %v; want 1 blob listed", rep, err)
	}
	second.locks = testLocks(newDeadRedis(t, e))
	if rep, err := second.Sweep(ctx); err != nil || rep.Scanned != 1 {
		t.Errorf("a sweep without Redis: %+v, %v; want it to run unlocked", rep, err)
	}
}

// TestTombstonePurge: tombstones older than the retention are deleted, younger ones kept.
func TestTombstonePurge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(storetest.SeedSpec{Pastes: 1200, Expired: 1200, Shared: 0.5, Tag: "P"})
	x := e.expirer(1, func(c *Config) { c.TombstoneRetention = time.Hour })
	e.runOnce(x)
	e.exec(`UPDATE tombstones SET deleted_at = now() - interval '2 hours' WHERE short_code < 'P0000000600'`)
	r := e.runOnce(x)
	if r.Purged != 599 {
		t.Errorf("purged %d, want 599", r.Purged)
	}
	if n := e.count(`SELECT count(*) FROM tombstones`); n != 601 {
		t.Errorf("%d rows left, want 601", n)
	}
}

// TestOwnerDeleteDrainsAtOnce: the blob of an owner-deleted paste is deleted as soon as the blob
// deleter is kicked, not at its next period (an hour here), with the subsystem's Run loop going.
func TestOwnerDeleteDrainsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	code := e.paste("owner deletes this", time.Now().Add(time.Hour))
	x := e.expirer(1, func(c *Config) { c.OutboxEvery, c.Schedule, c.SweepSchedule = time.Hour, "@yearly", "" })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	rel, err := e.store.DeletePaste(context.Background(), code, "t")
	if err != nil || len(rel.BlobKeys) != 1 {
		t.Fatalf("delete: %+v, %v", rel, err)
	}
	x.Kick()
	waitFor(t, "the freed blob is gone from the bucket and the outbox", func() bool {
		return len(blobtest.Keys(t, e.bucket)) == 0 && e.count(`SELECT count(*) FROM blob_outbox`) == 0
	})
	e.audit().Consistent(t)
}
