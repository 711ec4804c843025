package benchdata

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sync/errgroup"
)

// BucketSnapshot is a hard-linked copy of a bucket's folder in versitygw's data directory (its
// posix backend keeps one file per object): restoring it takes seconds where uploading again would
// take minutes, and costs no disk beyond the directories.
type BucketSnapshot struct {
	bucket                string
	live, snapshot, trash string
}

// NewBucketSnapshot names the snapshot of bucket, kept beside versitygw's data directory dataDir.
func NewBucketSnapshot(dataDir, bucket string) BucketSnapshot {
	return BucketSnapshot{
		bucket:   bucket,
		live:     filepath.Join(dataDir, bucket),
		snapshot: filepath.Join(filepath.Dir(dataDir), "snapshots", bucket),
		trash:    filepath.Join(filepath.Dir(dataDir), "trash"),
	}
}

// Blob is an object a benchmark loads into its bucket.
type Blob struct {
	Key     string
	Content []byte
}

// LoadBucket fills the snapshot's bucket afresh with blobs, 32 uploads at a time, and snapshots it:
// later runs restore it in seconds rather than upload again.
func (s Services) LoadBucket(ctx context.Context, snap BucketSnapshot, blobs []Blob) error {
	if err := snap.Empty(); err != nil {
		return err
	}
	bucket, err := s.OpenBucket(ctx, snap.bucket)
	if err != nil {
		return err
	}
	var g errgroup.Group
	g.SetLimit(32)
	for _, b := range blobs {
		g.Go(func() error { return bucket.Put(ctx, b.Key, b.Content) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return snap.Take(ctx)
}

// Exists reports whether a snapshot was taken.
func (s BucketSnapshot) Exists() bool {
	_, err := os.Stat(s.snapshot)
	return err == nil
}

// Path is where a sidecar file of the snapshot goes: what a benchmark needs to know of the data.
func (s BucketSnapshot) Path(suffix string) string { return s.snapshot + suffix }

// Take snapshots the bucket's folder as it is now.
func (s BucketSnapshot) Take(ctx context.Context) error {
	if err := os.RemoveAll(s.snapshot); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.snapshot), 0o755); err != nil {
		return err
	}
	return exec.CommandContext(ctx, "cp", "-al", s.live, s.snapshot).Run()
}

// Empty moves the bucket's folder aside (deleted by Close): the bucket is gone, with whatever an
// interrupted load left in it, and opening it again creates it empty.
func (s BucketSnapshot) Empty() error {
	if err := os.MkdirAll(s.trash, 0o755); err != nil {
		return err
	}
	used, err := os.MkdirTemp(s.trash, "used-")
	if err != nil {
		return err
	}
	if err := os.Rename(s.live, filepath.Join(used, "bucket")); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// Restore puts the bucket's folder back as snapshotted: the used copy moves aside (Empty) and a
// hard-linked copy of the snapshot takes its place.
func (s BucketSnapshot) Restore(ctx context.Context) error {
	if err := s.Empty(); err != nil {
		return err
	}
	if err := exec.CommandContext(ctx, "cp", "-al", s.snapshot, s.live).Run(); err != nil {
		return fmt.Errorf("restore bucket: %w", err)
	}
	return nil
}

// Close deletes the used copies.
func (s BucketSnapshot) Close() { os.RemoveAll(s.trash) }
