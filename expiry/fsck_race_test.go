package expiry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"pastebin/blob"
)

// chunkedBucket lists a real bucket in sixteen separate listings, one per first hex digit of the
// content hash (blob.NewKey's keys), and calls fetched after fetching each and before handing it
// over: the moment between S3's answer and fsck's merge, where a test makes things change.
type chunkedBucket struct {
	*blob.Bucket
	t       *testing.T
	fetched func(prefix string)
}

func (b chunkedBucket) ListAfter(ctx context.Context, prefix, after string, fn func([]blob.Object) error) error {
	if after != "" {
		b.t.Fatalf("listing after %q: the test wants one range", after)
	}
	for _, d := range "0123456789abcdef" {
		p := prefix + string(d)
		var page []blob.Object
		err := b.Bucket.List(ctx, p, func(objs []blob.Object) error { page = append(page, objs...); return nil })
		if err != nil {
			return err
		}
		b.fetched(p)
		if err := fn(page); err != nil {
			return err
		}
	}
	return nil
}

// contentStartingWith returns a content whose hash, and so whose blob key, starts with hex digit d.
func contentStartingWith(base string, d byte) string {
	for i := 0; ; i++ {
		c := fmt.Sprintf("%s %d", base, i)
		h := sha256.Sum256([]byte(c))
		if hex.EncodeToString(h[:])[0] == d {
			return c
		}
	}
}

// TestFsckSecondLook: the three ways the database and a listing read at different moments disagree
// without anything being wrong, each forced at its moment; fsck reports none of them.
//   - A paste created after the listing passed its key: its content key is not listed; HEAD finds it.
//   - A paste deleted, its blob freed and deleted, after fsck read its content key but before the
//     listing reached it: HEAD does not find it, and the content row is gone by the second look.
//   - An old blob waiting in the outbox, listed, then deleted by the blob deleter, which clears its
//     outbox entry, before fsck asks the database: untracked, but HEAD finds it gone.
func TestFsckSecondLook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	hour := time.Now().Add(time.Hour)
	e.paste(contentStartingWith("first listed", '1'), hour) // the cursor reads ahead when merging it
	freed := e.paste(contentStartingWith("freed", 'f'), hour)
	old := e.paste(contentStartingWith("in the outbox", 'c'), hour)
	if _, err := e.store.DeletePaste(ctx, old, "t"); err != nil {
		t.Fatal(err)
	}
	x := e.expirer(1)
	bucket := chunkedBucket{Bucket: e.bucket, t: t, fetched: func(prefix string) {
		switch prefix {
		case blob.Prefix + "0":
			if _, err := e.create(ctx, contentStartingWith("created late", '0'), hour, nil); err != nil {
				t.Error(err)
			}
		case blob.Prefix + "c":
			if _, err := e.store.DeletePaste(ctx, freed, "t"); err != nil {
				t.Error(err)
			}
			if d, f := x.DrainOutbox(ctx); d != 2 || f != 0 {
				t.Errorf("drained %d, %d failed; want both freed blobs deleted", d, f)
			}
		}
	}}
	c := NewChecker(CheckConfig{OrphanGrace: -time.Minute, OutboxMaxAge: time.Hour}, e.store, bucket, x.logger)
	c.bounds = []string{""} // one range, in order, so each change lands at its moment
	rep, err := c.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Blobs.Cleared != 3 {
		t.Errorf("got %v, %d cleared; want no problem and the 3 suspects cleared\n%+v", rep.Problems, rep.Blobs.Cleared, summarize(rep))
	}
	e.audit().Consistent(t)
}
