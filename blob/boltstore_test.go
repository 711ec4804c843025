package blob

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
	bolt "go.etcd.io/bbolt"
)

func openBoltStore(t *testing.T) (*boltStore, *bolt.DB) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "s3.bolt"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newBoltStore(db)
	t.Cleanup(func() { s.stop(); db.Close() })
	if err := s.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	return s, db
}

func lastTxID(t *testing.T, db *bolt.DB) int {
	t.Helper()
	var id int
	if err := db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

var onlyNew = &gofakes3.PutConditions{IfNoneMatch: new("*")}

// TestPutsWaitingCommitTogether: the puts that queue while a commit holds the bolt file's writer
// lock are written together after it, at most two transactions for all of them (the committer may
// have taken the first few before it found the lock taken), each answered on its own and in the
// order queued: a key taken before or earlier in the group refuses its If-None-Match put, a
// missing bucket refuses its put, and the others are stored.
func TestPutsWaitingCommitTogether(t *testing.T) {
	s, db := openBoltStore(t)
	if _, err := s.PutObject("bkt", "taken", nil, bytes.NewReader([]byte("first")), 5, onlyNew); err != nil {
		t.Fatal(err)
	}
	before := lastTxID(t, db)
	tx, err := db.Begin(true) // the writer lock: the committer's Update waits for it
	if err != nil {
		t.Fatal(err)
	}
	type put struct{ bucket, key, body string }
	puts := []put{{"bkt", "taken", "second"}, {"nobucket", "k", "x"}, {"bkt", "twice", "one"}, {"bkt", "twice", "two"}}
	for i := range 40 {
		puts = append(puts, put{"bkt", fmt.Sprintf("k%02d", i), fmt.Sprint(i)})
	}
	queued := make([]*groupPut, len(puts))
	for i, p := range puts {
		if queued[i], err = newGroupPut(p.bucket, p.key, nil, []byte(p.body), true); err != nil {
			t.Fatal(err)
		}
		s.puts <- queued[i]
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	for i, p := range queued {
		err := <-p.done
		if refused := i < 2 || i == 3; (err != nil) != refused {
			t.Errorf("put %d (%s/%s): %v, refused should be %v", i, p.bucket, p.key, err, refused)
		}
	}
	if got := lastTxID(t, db) - before; got > 2 {
		t.Errorf("%d commits for %d puts queued together, want at most 2", got, len(puts))
	}
	for key, want := range map[string]string{"taken": "first", "twice": "one", "k00": "0", "k39": "39"} {
		if got := readObject(t, s3bolt.New(db), key); got != want {
			t.Errorf("%s holds %q, want %q", key, got, want)
		}
	}
}

func readObject(t *testing.T, b gofakes3.Backend, key string) string {
	t.Helper()
	obj, err := b.GetObject("bkt", key, nil)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer obj.Contents.Close()
	data, err := io.ReadAll(obj.Contents)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestGroupPutsReadByS3bolt: what boltStore writes, gofakes3's s3bolt backend reads field for
// field (boltObject copies its schema), so a store written now still opens with s3bolt alone.
func TestGroupPutsReadByS3bolt(t *testing.T) {
	s, db := openBoltStore(t)
	start := time.Now().Add(-time.Second)
	meta := map[string]string{"Content-Type": "application/octet-stream"}
	if _, err := s.PutObject("bkt", "blobs/aa/one", meta, bytes.NewReader([]byte("hello")), 5, onlyNew); err != nil {
		t.Fatal(err)
	}
	old := s3bolt.New(db)
	obj, err := old.GetObject("bkt", "blobs/aa/one", nil)
	if err != nil {
		t.Fatal(err)
	}
	obj.Contents.Close()
	hash := md5.Sum([]byte("hello"))
	if obj.Size != 5 || !bytes.Equal(obj.Hash, hash[:]) || !cmp.Equal(obj.Metadata, meta) {
		t.Errorf("s3bolt reads size %d, hash %x, metadata %v; want 5, %x, %v", obj.Size, obj.Hash, obj.Metadata, hash, meta)
	}
	if got := readObject(t, old, "blobs/aa/one"); got != "hello" {
		t.Errorf("s3bolt reads %q", got)
	}
	list, err := old.ListBucket("bkt", nil, gofakes3.ListBucketPage{})
	if err != nil || len(list.Contents) != 1 {
		t.Fatalf("s3bolt lists %v (%v)", list, err)
	}
	if c := list.Contents[0]; c.Size != 5 || c.LastModified.Before(start) || c.LastModified.After(time.Now()) {
		t.Errorf("s3bolt lists size %d, modified %v", c.Size, c.LastModified)
	}
}

// TestStoreCompactedWhenMostlyFree: a bolt file that deletes left mostly free is rewritten
// without its free pages when the store opens, with every object left and its bucket as they were;
// a copy that a crash cut short is removed; a file with little free is opened as it is.
func TestStoreCompactedWhenMostlyFree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s3.bolt")
	db, err := openStore(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	s := newBoltStore(db)
	if err := s.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 200 {
		key := fmt.Sprintf("blobs/%02x/%03d", i%256, i)
		body := bytes.Repeat([]byte(key), 4096)
		if _, err := s.PutObject("bkt", key, nil, bytes.NewReader(body), int64(len(body)), onlyNew); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	if _, err := s.DeleteMulti("bkt", keys[10:]...); err != nil {
		t.Fatal(err)
	}
	s.stop()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before := fileSize(t, path)
	if err := os.WriteFile(path+".compacting", []byte("cut short"), 0o600); err != nil {
		t.Fatal(err)
	}

	db, err = openStore(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if after := fileSize(t, path); after*4 > before {
		t.Errorf("the file went from %d to %d bytes, want a quarter or less", before, after)
	}
	if _, err := os.Stat(path + ".compacting"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the copy a crash cut short is still there: %v", err)
	}
	old := s3bolt.New(db)
	for _, key := range keys[:10] {
		if got := readObject(t, old, key); got != strings.Repeat(key, 4096) {
			t.Errorf("%s: %d bytes after compaction", key, len(got))
		}
	}
	list, err := old.ListBucket("bkt", nil, gofakes3.ListBucketPage{})
	if err != nil || len(list.Contents) != 10 {
		t.Fatalf("listed %d objects (%v), want 10", len(list.Contents), err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	db, err = openStore(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if again, _ := os.Stat(path); !os.SameFile(info, again) {
		t.Error("a file with little free was rewritten")
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}
