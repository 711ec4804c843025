package blob

import (
	"crypto/md5"
	"errors"
	"io"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
	bolt "go.etcd.io/bbolt"
	"gopkg.in/mgo.v2/bson"
)

// boltStore is the embedded S3 server's storage: gofakes3's s3bolt backend over one bolt file,
// except that puts are committed in groups. A bolt transaction commits with two flushes to disk
// and one writer at a time, so s3bolt, committing each put alone, serves as many puts a second as
// the disk does flushes, whatever the number of clients; here one committer takes every put
// waiting, writes them in one transaction, and answers each once that transaction is on disk.
// While it flushes, the next group gathers. A put still answers only when its object is on disk,
// and a crash loses no answered put, nor leaves half of one.
//
// Reads, listings, deletes and buckets are s3bolt's own, and puts write objects exactly as
// s3bolt does (boltObject), so a store written before reads as it is, and this one by s3bolt.
type boltStore struct {
	*s3bolt.Backend
	db   *bolt.DB
	puts chan *groupPut // queued for the next group
	quit chan struct{}  // closed by stop: no more puts are taken
	done chan struct{}  // closed when the committer has answered its last group
}

// A group stops at maxGroupPuts puts, or once its objects reach maxGroupBytes: a transaction holds
// all its pages in memory until it commits.
const (
	maxGroupPuts  = 256
	maxGroupBytes = 32 << 20
)

// errStopping answers a put that comes after the server began to stop.
var errStopping = errors.New("embedded s3: stopping")

// groupPut is one put waiting for its group's commit.
type groupPut struct {
	bucket, key string
	value       []byte // the object as s3bolt keeps it
	onlyNew     bool   // If-None-Match: * (the pastebin's puts never overwrite)
	done        chan error
}

func newBoltStore(db *bolt.DB) *boltStore {
	s := &boltStore{Backend: s3bolt.New(db), db: db, puts: make(chan *groupPut, maxGroupPuts),
		quit: make(chan struct{}), done: make(chan struct{})}
	go s.commitLoop()
	return s
}

// stop lets the committer finish; puts after it answer errStopping. The caller closes db after.
func (s *boltStore) stop() {
	close(s.quit)
	<-s.done
}

// PutObject queues the object for the next group commit and waits for it to be on disk.
// Metadata is kept as s3bolt keeps it, but not merged with an earlier object's under the key.
func (s *boltStore) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64,
	cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	var res gofakes3.PutObjectResult
	if cond != nil && cond.IfMatch != nil {
		return s.Backend.PutObject(bucket, key, meta, input, size, cond) // compares ETags; the pastebin sends none
	}
	data, err := gofakes3.ReadAll(input, size)
	if err != nil {
		return res, err
	}
	p, err := newGroupPut(bucket, key, meta, data, cond != nil && cond.IfNoneMatch != nil)
	if err != nil {
		return res, err
	}
	return res, s.await(p)
}

// newGroupPut makes the object as s3bolt keeps it, ready to queue.
func newGroupPut(bucket, key string, meta map[string]string, data []byte, onlyNew bool) (*groupPut, error) {
	hash := md5.Sum(data)
	value, err := bson.Marshal(&boltObject{Name: key, Metadata: meta, LastModified: time.Now(),
		Size: int64(len(data)), Contents: data, Hash: hash[:]})
	if err != nil {
		return nil, err
	}
	return &groupPut{bucket: bucket, key: key, value: value, onlyNew: onlyNew, done: make(chan error, 1)}, nil
}

// await queues p and waits for its answer.
func (s *boltStore) await(p *groupPut) error {
	select {
	case s.puts <- p:
	case <-s.quit:
		return errStopping
	}
	select {
	case err := <-p.done:
		return err
	case <-s.done: // the committer answers every put it took before it is done
		select {
		case err := <-p.done:
			return err
		default:
			return errStopping
		}
	}
}

// commitLoop commits groups until stop, then refuses the puts still queued.
func (s *boltStore) commitLoop() {
	defer close(s.done)
	for {
		select {
		case p := <-s.puts:
			s.commit(s.gather(p))
		case <-s.quit:
			for {
				select {
				case p := <-s.puts:
					p.done <- errStopping
				default:
					return
				}
			}
		}
	}
}

// gather takes first and every put waiting behind it, within the group's limits, without waiting
// for more: a put that comes alone is committed at once.
func (s *boltStore) gather(first *groupPut) []*groupPut {
	group, bytes := []*groupPut{first}, len(first.value)
	for len(group) < maxGroupPuts && bytes < maxGroupBytes {
		select {
		case p := <-s.puts:
			group, bytes = append(group, p), bytes+len(p.value)
		default:
			return group
		}
	}
	return group
}

// commit writes the group in one transaction and answers each put. A put refused (its bucket is
// gone, its key exists) is answered so and takes nothing from the others; a commit that fails
// fails them all.
func (s *boltStore) commit(group []*groupPut) {
	refused := make([]error, len(group))
	err := s.db.Update(func(tx *bolt.Tx) error {
		for i, p := range group {
			refused[i] = p.write(tx)
		}
		return nil
	})
	for i, p := range group {
		p.done <- errors.Join(err, refused[i])
	}
}

func (p *groupPut) write(tx *bolt.Tx) error {
	b := tx.Bucket([]byte(p.bucket))
	if b == nil {
		return gofakes3.BucketNotFound(p.bucket)
	}
	if p.onlyNew && b.Get([]byte(p.key)) != nil {
		return gofakes3.ErrorMessage(gofakes3.ErrPreconditionFailed, "The object already exists")
	}
	return b.Put([]byte(p.key), p.value)
}

// boltObject is an object as gofakes3's s3bolt backend stores it (its schema.go), field for field:
// s3bolt reads what boltStore writes. TestGroupPutsReadByS3bolt holds them together.
type boltObject struct {
	Name         string            `bson:"name"`
	Metadata     map[string]string `bson:"metadata"`
	LastModified time.Time         `bson:"lastmodified"`
	Size         int64             `bson:"size"`
	Contents     []byte            `bson:"contents"`
	Hash         []byte            `bson:"hash"`
}
