package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pastebin/blob"
	"pastebin/blob/blobtest"
	"pastebin/redact"
	"pastebin/store/storetest"
)

// fsck runs `pastebin fsck args...` and returns what it printed and its error (a non-zero exit).
func (f deployment) fsck(args ...string) (string, error) {
	var out strings.Builder
	err := run(context.Background(), append([]string{"pastebin", "fsck"}, args...), func(k string) string { return f.env[k] }, &out)
	return out.String(), err
}

// fsckJSON runs fsck with --json and decodes its report, all it printed.
func (f deployment) fsckJSON(t *testing.T, args ...string) (fsckJSONReport, error) {
	t.Helper()
	out, err := f.fsck(append(args, "--json")...)
	var rep fsckJSONReport
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
		t.Fatalf("fsck --json printed %q: %v", out, jerr)
	}
	return rep, err
}

// fsckJSONReport is the part of the JSON report a script reads, decoded independently of the type
// that writes it.
type fsckJSONReport struct {
	OK        bool     `json:"ok"`
	Problems  []string `json:"problems"`
	RefCounts struct {
		Wrong    int               `json:"wrong"`
		Repaired []json.RawMessage `json:"repaired"`
	} `json:"ref_counts"`
	Blobs struct {
		Missing  int      `json:"missing"`
		Orphans  int      `json:"orphans"`
		Queued   int      `json:"queued"`
		Examples []string `json:"orphan_examples"`
	} `json:"blobs"`
}

// TestFsckCommand is the contract scripts rely on: exit 0 and OK on a consistent deployment;
// non-zero with each problem named once something is broken; --repair fixes the ref_count and
// queues the orphan but keeps, and still reports, the paste whose blob is lost.
func TestFsckCommand(t *testing.T) {
	t.Parallel()
	f := newDeployment(t, storetest.SeedSpec{Pastes: 300, Shared: 0.4, Tag: "K"})
	ctx := context.Background()
	out, err := f.fsck()
	if err != nil || !strings.Contains(out, "result") || !strings.Contains(out, "OK") {
		t.Fatalf("fsck on a consistent deployment: %v\n%s", err, out)
	}

	f.exec(t, `UPDATE content SET ref_count = ref_count + 1 WHERE blob_key = (SELECT min(blob_key) FROM content)`)
	lost := storetest.Count(t, f.store.Pool(), `SELECT count(*) FROM pastes p JOIN content c USING (content_hash)
		WHERE c.blob_key = (SELECT max(blob_key) FROM content)`)
	lostKey := f.queryString(t, `SELECT max(blob_key) FROM content`)
	if _, err := f.bucket.Delete(ctx, []string{lostKey}); err != nil {
		t.Fatal(err)
	}
	orphan := "blobs/00/abandoned.upload"
	if err := f.bucket.Put(ctx, orphan, []byte("abandoned")); err != nil {
		t.Fatal(err)
	}
	f.env["PASTEBIN_ORPHAN_GRACE"] = "1ns" // every untracked blob is old
	waitListedOlder(t, f.bucket, orphan)

	rep, err := f.fsckJSON(t)
	if err == nil {
		t.Error("fsck exited 0 with three problems")
	}
	got := [4]int{rep.RefCounts.Wrong, rep.Blobs.Missing, rep.Blobs.Orphans, len(rep.Problems)}
	if diff := cmp.Diff([4]int{1, 1, 1, 3}, got); diff != "" || rep.OK {
		t.Errorf("wrong, missing, orphans, problems (-want +got):\n%s%v", diff, rep.Problems)
	}
	out, _ = f.fsck()
	lostCode := f.queryString(t, `SELECT min(short_code) FROM pastes JOIN content USING (content_hash) WHERE blob_key = '`+lostKey+`'`)
	for _, want := range []string{"PROBLEM", "invariant 1", "invariant 2", "invariant 3", lostKey, orphan, redact.Code(lostCode)} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	jsonOut, _ := f.fsck("--json")
	if strings.Contains(out+jsonOut, lostCode) { // a code lets anyone read its paste
		t.Errorf("the reports name paste %s by its code:\n%s\n%s", lostCode, out, jsonOut)
	}

	rep, err = f.fsckJSON(t, "--repair")
	if err == nil || len(rep.Problems) != 1 || len(rep.RefCounts.Repaired) != 1 || rep.Blobs.Queued != 1 {
		t.Errorf("repair: %v, %+v; want the ref_count repaired, the orphan queued, the lost blob still a problem", err, rep)
	}
	if a := storetest.Check(t, f.store.Pool(), blobtest.Keys(t, f.bucket)); len(a.RefMismatches) != 0 || len(a.UntrackedBlobs) != 0 {
		t.Errorf("after repair: mismatches %v, untracked %v", a.RefMismatches, a.UntrackedBlobs)
	}
	if n := storetest.Count(t, f.store.Pool(), `SELECT count(*) FROM pastes p JOIN content c USING (content_hash)
		WHERE c.blob_key = $1 AND p.status = 'NOT_EXPIRED'`, lostKey); n != lost {
		t.Errorf("%d pastes on the lost blob after repair, want all %d kept", n, lost)
	}

	if err := f.bucket.Put(ctx, lostKey, []byte(lostKey)); err != nil {
		t.Fatal(err)
	}
	if out, err := f.fsck(); err != nil {
		t.Errorf("fsck after restoring the blob: %v\n%s", err, out)
	}
}

func (f deployment) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := f.store.Pool().Exec(context.Background(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func (f deployment) queryString(t *testing.T, query string) string {
	t.Helper()
	var s string
	if err := f.store.Pool().QueryRow(context.Background(), query).Scan(&s); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return s
}

// waitListedOlder waits until the clock is past key's last modification as S3 lists it, so a grace
// of a nanosecond makes it old whatever the server's rounding.
func waitListedOlder(t *testing.T, b *blob.Bucket, key string) {
	t.Helper()
	var modified time.Time
	err := b.List(context.Background(), key, func(objs []blob.Object) error {
		for _, o := range objs {
			modified = o.LastModified
		}
		return nil
	})
	if err != nil || modified.IsZero() {
		t.Fatalf("list %s: %v", key, err)
	}
	time.Sleep(time.Until(modified.Add(time.Millisecond)))
}
