package blob_test

import (
	"context"
	"errors"
	"testing"

	"pastebin/blob"
)

// TestEmbeddedSharedByProcesses: a second process finds the store busy at once (no hang) and can
// use the first process's server instead; once that server stops, nothing points at it.
func TestEmbeddedSharedByProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := blob.StartEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := blob.StartEmbedded(dir); !errors.Is(err, blob.ErrEmbeddedBusy) {
		t.Fatalf("second start on the same store: %v, want ErrEmbeddedBusy", err)
	}
	endpoint, err := blob.RunningEmbedded(dir)
	if err != nil || endpoint != first.Endpoint {
		t.Fatalf("running endpoint %q (%v), want %q", endpoint, err, first.Endpoint)
	}
	b, err := blob.Open(context.Background(), blob.Config{Endpoint: endpoint, Region: "us-east-1", Bucket: "shared",
		PathStyle: true, AccessKeyID: "embedded", SecretAccessKey: "embedded"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(context.Background(), "blobs/aa/x", []byte("through the running server")); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := blob.RunningEmbedded(dir); err == nil {
		t.Error("the endpoint of a stopped server is still recorded")
	}
	again, err := blob.StartEmbedded(dir) // the data persisted in the store
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	b, _ = blob.Open(context.Background(), blob.Config{Endpoint: again.Endpoint, Region: "us-east-1", Bucket: "shared",
		PathStyle: true, AccessKeyID: "embedded", SecretAccessKey: "embedded"})
	if ok, err := b.Exists(context.Background(), "blobs/aa/x"); !ok || err != nil {
		t.Errorf("after a restart the object is gone (%v, %v)", ok, err)
	}
}
