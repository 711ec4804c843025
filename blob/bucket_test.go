package blob_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"pastebin/blob"
	"pastebin/blob/blobtest"
)

// servers runs fn against versitygw (real S3 with signatures), the embedded server, and the
// embedded server's store in process, as the process that runs the server uses it.
func servers(t *testing.T, fn func(t *testing.T, b *blob.Bucket)) {
	t.Run("versitygw", func(t *testing.T) { t.Parallel(); fn(t, blobtest.New(t)) })
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		b, _ := blobtest.Embedded(t)
		fn(t, b)
	})
	t.Run("embedded in process", func(t *testing.T) {
		t.Parallel()
		b, err := startEmbedded(t, t.TempDir()).Bucket("pastebin")
		if err != nil {
			t.Fatal(err)
		}
		fn(t, b)
	})
}

func TestPutGet(t *testing.T) {
	t.Parallel()
	servers(t, func(t *testing.T, b *blob.Bucket) {
		ctx := context.Background()
		h := sha256.Sum256([]byte("hello"))
		key, err := blob.NewKey(h[:])
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Put(ctx, key, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		if err := b.Put(ctx, key, []byte("other")); err == nil {
			t.Error("a second put on the same key succeeded; keys must never be overwritten")
		}
		rc, err := b.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != "hello" {
			t.Errorf("got %q", got)
		}
		if _, err := b.Get(ctx, key+"-missing"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("missing key: %v, want ErrNotFound", err)
		}
		if ok, err := b.Exists(ctx, key); !ok || err != nil {
			t.Errorf("Exists = %v, %v", ok, err)
		}
		if ok, err := b.Exists(ctx, key+"-missing"); ok || err != nil {
			t.Errorf("Exists(missing) = %v, %v", ok, err)
		}
	})
}

// TestDeleteBatches deletes more keys than one DeleteObjects call may carry, some of them missing.
func TestDeleteBatches(t *testing.T) {
	t.Parallel()
	servers(t, func(t *testing.T, b *blob.Bucket) {
		ctx := context.Background()
		var keys []string
		for i := 0; i < 2100; i++ {
			k := fmt.Sprintf("blobs/test/%05d", i)
			if i%7 != 0 { // every seventh key never existed
				if err := b.Put(ctx, k, []byte{byte(i)}); err != nil {
					t.Fatal(err)
				}
			}
			keys = append(keys, k)
		}
		var listed, pages int
		err := b.List(ctx, blob.Prefix, func(objs []blob.Object) error {
			pages++
			listed += len(objs)
			return nil
		})
		if err != nil || listed != 1800 || pages < 2 {
			t.Fatalf("listed %d objects in %d pages (%v), want 1800 in several pages", listed, pages, err)
		}
		res, err := b.Delete(ctx, keys)
		if err != nil || len(res.Failed) != 0 || len(res.Deleted) != len(keys) {
			t.Fatalf("deleted %d, failed %d (%v): want all %d deleted", len(res.Deleted), len(res.Failed), err, len(keys))
		}
		if left := blobtest.Keys(t, b); len(left) != 0 {
			t.Errorf("%d objects left, e.g. %v", len(left), left[0])
		}
	})
}

// TestPutWhileDeletesEmptyTheBucket puts and deletes objects side by side in a bucket that keeps
// going empty, as a test deployment does: a file-backed server (versitygw's posix backend) then
// removes the prefix folders a put is creating (versity/versitygw#1988), and answers 409
// ExistingObjectIsDirectory for a key that is no directory. No put may fail for it.
func TestPutWhileDeletesEmptyTheBucket(t *testing.T) {
	t.Parallel()
	servers(t, func(t *testing.T, b *blob.Bucket) {
		ctx := context.Background()
		const workers, rounds = 6, 150
		errs := make(chan error, workers)
		for w := range workers {
			go func() {
				for i := range rounds {
					h := sha256.Sum256(fmt.Appendf(nil, "%d/%d", w, i))
					key, err := blob.NewKey(h[:])
					if err == nil {
						err = b.Put(ctx, key, h[:])
					}
					if err == nil {
						_, err = b.Delete(ctx, []string{key})
					}
					if err != nil {
						errs <- fmt.Errorf("round %d: %w", i, err)
						return
					}
				}
				errs <- nil
			}()
		}
		for range workers {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	})
}

// TestConcurrentPutsKeepTheirConnections: puts from many goroutines at once reuse their
// connections to S3 rather than open one per put. (The SDK's own client keeps 10 idle connections
// a host and closes the rest: at 32 puts at once, most puts dialed anew, each leaving a socket in
// TIME_WAIT, and over loopback at a thousand puts a second that runs out of ports in a minute.)
func TestConcurrentPutsKeepTheirConnections(t *testing.T) {
	t.Parallel()
	var dials atomic.Int64
	srv := httptest.NewUnstartedServer(gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	b, err := blob.Open(context.Background(), blob.Config{Endpoint: srv.URL, Region: "us-east-1", Bucket: "conns",
		PathStyle: true, AccessKeyID: "k", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	const clients, each = 32, 20
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				if err := b.Put(context.Background(), fmt.Sprintf("blobs/%02d/%02d", c, i), []byte("x")); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration(c%4) * time.Millisecond) // as a create's other steps do: puts come and go

			}
		})
	}
	wg.Wait()
	if n := dials.Load(); n > 2*clients {
		t.Errorf("%d puts from %d clients at once opened %d connections, want at most %d", clients*each, clients, n, 2*clients)
	}
}
