package expiry

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"pastebin/blob"
	"pastebin/blob/blobtest"
	"pastebin/redact"
	"pastebin/store/storetest"
)

func (e *env) checker(repair bool, grace time.Duration) *Checker {
	cfg := CheckConfig{OrphanGrace: grace, OutboxMaxAge: time.Hour, Repair: repair}
	return NewChecker(cfg, e.store, e.bucket, slog.New(slog.NewTextHandler(e.logs, nil)))
}

func (e *env) fsck(c *Checker) CheckReport {
	e.t.Helper()
	rep, err := c.Check(context.Background())
	if err != nil {
		e.t.Fatalf("fsck: %v\nlogs:\n%s", err, e.logs.String())
	}
	return rep
}

// put uploads an object under a fresh key for content and returns the key.
func (e *env) put(content string) string {
	e.t.Helper()
	h := sha256.Sum256([]byte(content))
	key, _ := blob.NewKey(h[:])
	if err := e.bucket.Put(context.Background(), key, []byte(content)); err != nil {
		e.t.Fatal(err)
	}
	return key
}

func sha(content string) []byte {
	h := sha256.Sum256([]byte(content))
	return h[:]
}

// fsckSummary is what the tests compare of a report.
type fsckSummary struct {
	Wrong, Unreferenced, Repaired     int
	Missing                           int
	MissingPastes                     int64
	Orphans, Queued, InFlight, Listed int
	Problems                          int
	OK                                bool
}

func summarize(r CheckReport) fsckSummary {
	return fsckSummary{
		Wrong: r.Refs.Wrong, Unreferenced: r.Refs.Unreferenced, Repaired: len(r.Refs.Repaired),
		Missing: r.Blobs.Missing, MissingPastes: r.Blobs.MissingPastes, Orphans: r.Blobs.Orphans,
		Queued: r.Blobs.Queued, InFlight: r.Blobs.InFlight, Listed: r.Blobs.Listed, Problems: len(r.Problems), OK: r.OK,
	}
}

// TestFsckConsistent: on a deployment that went through creates, shared content, deletes and a
// cleanup run, fsck finds nothing, and agrees with the independent audit.
func TestFsckConsistent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hour := time.Now().Add(time.Hour)
	e.paste("shared", hour)
	gone := e.paste("shared", hour)
	e.paste("alone", hour)
	e.paste("expired", time.Now().Add(-time.Minute))
	if _, err := e.store.DeletePaste(context.Background(), gone, "t"); err != nil {
		t.Fatal(err)
	}
	e.runOnce(e.expirer(1))
	e.audit().Consistent(t)
	rep := e.fsck(e.checker(false, 24*time.Hour))
	want := fsckSummary{Listed: 2, OK: true}
	if diff := cmp.Diff(want, summarize(rep)); diff != "" {
		t.Errorf("report (-want +got):\n%s\nproblems: %v", diff, rep.Problems)
	}
	if rep.Pastes != 2 || rep.Content != 2 {
		t.Errorf("counted %d pastes, %d content rows; want 2 and 2", rep.Pastes, rep.Content)
	}
}

// TestFsckFindsAndRepairs breaks each invariant on purpose, checks fsck reports what the
// independent audit sees, then that --repair fixes the ref_counts and queues the orphan, and leaves
// the paste whose blob is lost in place, reported.
func TestFsckFindsAndRepairs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	hour := time.Now().Add(time.Hour)
	for range 3 {
		e.paste("shared", hour)
	}
	e.paste("counted low", hour)
	e.paste("counted low", hour)
	lost := e.paste("its blob is lost", hour)
	e.paste("fine", hour)
	e.exec(`UPDATE content SET ref_count = ref_count + 2 WHERE content_hash = $1`, sha("shared"))
	e.exec(`UPDATE content SET ref_count = 1 WHERE content_hash = $1`, sha("counted low"))
	leaked := e.put("leaked")
	e.exec(`INSERT INTO content (content_hash, blob_key, size_bytes, ref_count) VALUES ($1, $2, 6, 0)`, sha("leaked"), leaked)
	lostKey := e.strings(`SELECT blob_key FROM content WHERE content_hash = $1`, sha("its blob is lost"))[0]
	if _, err := e.bucket.Delete(ctx, []string{lostKey}); err != nil {
		t.Fatal(err)
	}
	orphan := e.put("abandoned upload")
	e.exec(`INSERT INTO blob_deletions (blob_key, enqueued_at, attempts, last_error)
		VALUES ('blobs/zz/stuck', now() - interval '2 hours', 7, 'AccessDenied')`)
	audit := e.audit()

	// Within the grace period the orphan is an upload in flight.
	rep := e.fsck(e.checker(false, time.Hour))
	want := fsckSummary{Wrong: 2, Unreferenced: 1, Missing: 1, MissingPastes: 1, InFlight: 1, Listed: 5, Problems: 4}
	if diff := cmp.Diff(want, summarize(rep)); diff != "" {
		t.Errorf("report within the grace (-want +got):\n%s\nproblems: %v", diff, rep.Problems)
	}

	rep = e.fsck(e.checker(false, -time.Minute)) // as if a day had passed
	want = fsckSummary{Wrong: 2, Unreferenced: 1, Missing: 1, MissingPastes: 1, Orphans: 1, Listed: 5, Problems: 5}
	if diff := cmp.Diff(want, summarize(rep)); diff != "" {
		t.Errorf("report (-want +got):\n%s\nproblems: %v", diff, rep.Problems)
	}
	sameAsAudit(t, rep, audit)
	if len(rep.Blobs.MissingBlobs) != 1 || !slices.Equal(rep.Blobs.MissingBlobs[0].Pastes, []string{redact.Code(lost)}) {
		t.Errorf("missing blobs %+v, want %s's with paste %s", rep.Blobs.MissingBlobs, lostKey, lost)
	}
	if rep.Outbox.Retrying != 1 || len(rep.Warnings) != 1 {
		t.Errorf("outbox %+v, warnings %v; want the stuck entry", rep.Outbox, rep.Warnings)
	}

	rep = e.fsck(e.checker(true, -time.Minute))
	want = fsckSummary{Wrong: 2, Unreferenced: 1, Repaired: 3, Missing: 1, MissingPastes: 1, Orphans: 1, Queued: 1,
		Listed: 5, Problems: 2} // the lost blob, and the outbox that does not drain
	if diff := cmp.Diff(want, summarize(rep)); diff != "" {
		t.Errorf("repair (-want +got):\n%s\nproblems: %v", diff, rep.Problems)
	}
	after := e.audit()
	if len(after.RefMismatches)+len(after.Unreferenced) != 0 || len(after.UntrackedBlobs) != 0 {
		t.Errorf("after repair: mismatches %v, rows at 0 %v, untracked %v", after.RefMismatches, after.Unreferenced, after.UntrackedBlobs)
	}
	for _, k := range []string{orphan, leaked} {
		if n := e.count(`SELECT count(*) FROM blob_deletions WHERE blob_key = $1`, k); n != 1 {
			t.Errorf("%s queued %d times, want 1", k, n)
		}
	}
	if n := e.count(`SELECT count(*) FROM pastes WHERE short_code = $1 AND status = 'NOT_EXPIRED'`, lost); n != 1 {
		t.Errorf("the paste whose blob is lost was dropped")
	}

	// Once the blob is restored and the outbox drained, nothing is left to report.
	if err := e.bucket.Put(ctx, lostKey, []byte("its blob is lost")); err != nil {
		t.Fatal(err)
	}
	e.exec(`DELETE FROM blob_deletions WHERE blob_key = 'blobs/zz/stuck'`)
	e.expirer(1).DrainOutbox(ctx)
	if rep = e.fsck(e.checker(false, -time.Minute)); !rep.OK {
		t.Errorf("after restoring: %v", rep.Problems)
	}
	e.audit().Consistent(t)
}

// sameAsAudit compares fsck's findings with the independent audit's.
func sameAsAudit(t *testing.T, rep CheckReport, a storetest.Audit) {
	t.Helper()
	var missing, untracked, unreferenced []string
	for _, o := range rep.Blobs.MissingBlobs {
		missing = append(missing, o.BlobKey)
	}
	untracked = append(untracked, rep.Blobs.OrphanKeys...)
	for _, x := range rep.Refs.Examples {
		if x.RefCount == 0 {
			unreferenced = append(unreferenced, x.BlobKey)
		}
	}
	got := [][]string{missing, untracked, unreferenced}
	want := [][]string{a.MissingBlobs, a.UntrackedBlobs, a.Unreferenced}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("fsck and the audit disagree on missing, untracked, unreferenced (-audit +fsck):\n%s", diff)
	}
	if rep.Refs.Wrong != len(a.RefMismatches) {
		t.Errorf("fsck found %d wrong ref_counts, the audit %d", rep.Refs.Wrong, len(a.RefMismatches))
	}
}

// TestFsckMissingAtTheEnd: content keys that sort after every listed object are checked too, and
// an empty bucket is no special case.
func TestFsckMissingAtTheEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	code := e.paste("zzz", time.Now().Add(time.Hour))
	e.exec(`UPDATE content SET blob_key = 'blobs/zz/after-everything'`)
	rep := e.fsck(e.checker(false, 24*time.Hour))
	want := fsckSummary{Missing: 1, MissingPastes: 1, InFlight: 1, Listed: 1, Problems: 1}
	if diff := cmp.Diff(want, summarize(rep)); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if len(rep.Blobs.MissingBlobs) != 1 || rep.Blobs.MissingBlobs[0].Pastes[0] != redact.Code(code) {
		t.Errorf("missing %+v, want paste %s", rep.Blobs.MissingBlobs, code)
	}
	if keys := blobtest.Keys(t, e.bucket); len(keys) != 1 {
		t.Errorf("fsck changed the bucket: %v", keys)
	}
}

// TestFsckRangeBounds: the key ranges checked side by side lose nothing at their bounds: keys equal
// to a bound, in the first and the last range, and a content key outside the blob prefix (never
// listed, found by its HEAD).
func TestFsckRangeBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for _, k := range []string{"blobs/0/first", "blobs/1", "blobs/f", "blobs/ff/last", "outside/prefix", "blobs/9/lost"} {
		e.exec(`INSERT INTO content (content_hash, blob_key, size_bytes, ref_count) VALUES ($1, $2, 1, 1)`, sha(k), k)
		e.exec(`INSERT INTO pastes (short_code, content_hash, owner_token_hash) VALUES ($1, $2, $2)`, k, sha(k))
		if k != "blobs/9/lost" {
			if err := e.bucket.Put(ctx, k, []byte(k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.bucket.Put(ctx, "blobs/5/orphan", []byte("orphan")); err != nil {
		t.Fatal(err)
	}
	rep := e.fsck(e.checker(false, -time.Minute))
	want := fsckSummary{Missing: 1, MissingPastes: 1, Orphans: 1, Listed: 5, Problems: 2}
	if diff := cmp.Diff(want, summarize(rep)); diff != "" || rep.Blobs.Cleared != 1 {
		t.Errorf("report (-want +got):\n%s%d cleared, want 1 (the key outside the prefix)\n%v", diff, rep.Blobs.Cleared, rep.Problems)
	}
	sameAsAudit(t, rep, e.audit())
}
