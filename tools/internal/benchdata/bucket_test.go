package benchdata

import (
	"context"
	"io"
	"os"
	"testing"
)

// TestLoadBucket: the loaded blobs are in the bucket, and a restore brings back one deleted since.
func TestLoadBucket(t *testing.T) {
	ctx := context.Background()
	s := services(t)
	snap := NewBucketSnapshot(s.S3DataDir, "pb-benchdata-"+randomHex(4))
	t.Cleanup(func() {
		_ = snap.Empty()
		snap.Close()
		os.RemoveAll(snap.Path(""))
	})
	blobs := []Blob{{Key: "blobs/aa/1", Content: []byte("one")}, {Key: "blobs/bb/2", Content: []byte("two")}}
	if err := s.LoadBucket(ctx, snap, blobs); err != nil {
		t.Fatal(err)
	}
	if !snap.Exists() {
		t.Fatal("no snapshot after LoadBucket")
	}
	bucket, err := s.OpenBucket(ctx, snap.bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bucket.Delete(ctx, []string{"blobs/aa/1"}); err != nil {
		t.Fatal(err)
	}
	if err := snap.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		r, err := bucket.Get(ctx, b.Key)
		if err != nil {
			t.Errorf("get %s: %v", b.Key, err)
			continue
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(got) != string(b.Content) {
			t.Errorf("%s holds %q (%v), want %q", b.Key, got, err, b.Content)
		}
	}
}
