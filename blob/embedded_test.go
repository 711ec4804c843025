package blob_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
	bolt "go.etcd.io/bbolt"

	"pastebin/blob"
	"pastebin/blob/blobtest"
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

// embeddedBucket opens the bucket the pastebin uses on the embedded server at endpoint.
func embeddedBucket(t *testing.T, endpoint string) *blob.Bucket {
	t.Helper()
	b, err := blob.Open(context.Background(), blob.Config{Endpoint: endpoint, Region: "us-east-1", Bucket: "pastebin",
		PathStyle: true, AccessKeyID: "embedded", SecretAccessKey: "embedded"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func startEmbedded(t *testing.T, dir string) *blob.Embedded {
	t.Helper()
	e, err := blob.StartEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func getObject(t *testing.T, b *blob.Bucket, key string) string {
	t.Helper()
	rc, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return string(data)
}

// TestEmbeddedReadsEarlierStore: a store that the embedded server wrote before its puts were
// committed in groups (gofakes3's s3bolt backend alone) is served as it is: its objects read,
// list and delete, and new puts join them.
func TestEmbeddedReadsEarlierStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "s3.bolt"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(s3bolt.New(db), gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	want := map[string]string{"blobs/aa/small": "small", "blobs/bb/large": strings.Repeat("0123456789abcdef\n", 8<<10)}
	old := embeddedBucket(t, srv.URL)
	for key, content := range want {
		if err := old.Put(context.Background(), key, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	srv.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	b := embeddedBucket(t, startEmbedded(t, dir).Endpoint)
	for key, content := range want {
		if got := getObject(t, b, key); got != content {
			t.Errorf("%s: %d bytes, want the %d written before", key, len(got), len(content))
		}
	}
	if err := b.Put(context.Background(), "blobs/cc/new", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if res, err := b.Delete(context.Background(), []string{"blobs/aa/small"}); err != nil || len(res.Failed) > 0 {
		t.Fatalf("delete: %v %v", res.Failed, err)
	}
	if got, want := blobtest.Keys(t, b), []string{"blobs/bb/large", "blobs/cc/new"}; !cmp.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
}

// boltTxID is the id of the last transaction committed to the embedded store in dir.
func boltTxID(t *testing.T, dir string) int {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "s3.bolt"), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id int
	if err := db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestEmbeddedCommitsConcurrentPutsTogether: puts from many clients at once share commits, and so
// their flushes to disk; each answered put is stored.
func TestEmbeddedCommitsConcurrentPutsTogether(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := startEmbedded(t, dir)
	embeddedBucket(t, e.Endpoint) // creates the bucket
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	before := boltTxID(t, dir)
	e = startEmbedded(t, dir)
	b := embeddedBucket(t, e.Endpoint)
	const clients, each = 32, 10
	errs := make(chan error, clients)
	for c := range clients {
		go func() {
			var err error
			for i := 0; i < each && err == nil; i++ {
				err = b.Put(context.Background(), fmt.Sprintf("blobs/%02d/%02d", c, i), []byte{byte(c), byte(i)})
			}
			errs <- err
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := len(blobtest.Keys(t, b)); n != clients*each {
		t.Fatalf("%d objects listed, want %d", n, clients*each)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if commits := boltTxID(t, dir) - before; commits >= clients*each {
		t.Errorf("%d puts from %d clients at once took %d commits: one each", clients*each, clients, commits)
	}
}

// TestEmbeddedConcurrentPutsOfOneKey: of puts of one key at once, exactly one wins (the pastebin's
// puts say If-None-Match: *), and the key holds the winner's bytes, whichever commit group they
// fell in.
func TestEmbeddedConcurrentPutsOfOneKey(t *testing.T) {
	t.Parallel()
	b := embeddedBucket(t, startEmbedded(t, t.TempDir()).Endpoint)
	const clients, keys = 12, 20
	var mu sync.Mutex
	winners := map[string][]string{}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for k := range keys {
				key, body := fmt.Sprintf("blobs/00/%02d", k), fmt.Sprintf("client %d", c)
				if err := b.Put(context.Background(), key, []byte(body)); err == nil {
					mu.Lock()
					winners[key] = append(winners[key], body)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for k := range keys {
		key := fmt.Sprintf("blobs/00/%02d", k)
		if len(winners[key]) != 1 {
			t.Errorf("%s: %d puts won (%v), want 1", key, len(winners[key]), winners[key])
			continue
		}
		if got := getObject(t, b, key); got != winners[key][0] {
			t.Errorf("%s holds %q, but %q won", key, got, winners[key][0])
		}
	}
}

// TestEmbeddedCloseLeavesNoWaitForUnusedConnections: a connection that a client opened ahead of
// need and never sent a request on (the bucket's client pools such connections) does not hold up
// Close, which http.Server.Shutdown alone would keep waiting 5 s for its first request, then fail.
func TestEmbeddedCloseLeavesNoWaitForUnusedConnections(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir())
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.Endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := e.Close(); err != nil {
		t.Fatalf("close with a connection that never carried a request: %v", err)
	}
}

// TestEmbeddedInProcessAndEndpointShareObjects: what the running process puts in process, another
// process reads, lists and deletes through the endpoint, and the other way round.
func TestEmbeddedInProcessAndEndpointShareObjects(t *testing.T) {
	t.Parallel()
	e := startEmbedded(t, t.TempDir())
	local, err := e.Bucket("pastebin")
	if err != nil {
		t.Fatal(err)
	}
	remote := embeddedBucket(t, e.Endpoint)
	ctx := context.Background()
	if err := local.Put(ctx, "blobs/aa/local", []byte("in process")); err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(ctx, "blobs/bb/remote", []byte("through the endpoint")); err != nil {
		t.Fatal(err)
	}
	if got := getObject(t, remote, "blobs/aa/local"); got != "in process" {
		t.Errorf("through the endpoint: %q", got)
	}
	if got := getObject(t, local, "blobs/bb/remote"); got != "through the endpoint" {
		t.Errorf("in process: %q", got)
	}
	if err := remote.Put(ctx, "blobs/aa/local", []byte("again")); err == nil {
		t.Error("a put through the endpoint replaced an object put in process")
	}
	if _, err := remote.Delete(ctx, []string{"blobs/aa/local"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := local.Exists(ctx, "blobs/aa/local"); ok || err != nil {
		t.Errorf("deleted through the endpoint, in process it exists: %v %v", ok, err)
	}
	if got := blobtest.Keys(t, local); !cmp.Equal(got, []string{"blobs/bb/remote"}) {
		t.Errorf("in process lists %v", got)
	}
}
