package blob

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/johannesboyne/gofakes3"
)

// localBucket is a bucket of the embedded S3 server's store, used by the process that runs the
// server: the objects its endpoint serves, without a request's signing, HTTP and two trips over
// loopback, which cost a create of new content as much processor time as the put's commit. Other
// processes (pastebin cleanup, fsck) reach the same objects through the endpoint.
type localBucket struct {
	store *boltStore
	name  string
}

// Bucket opens the bucket called name in this server's store, creating it if it does not exist,
// for use in this process.
func (e *Embedded) Bucket(name string) (*Bucket, error) {
	b := &Bucket{name: name, local: &localBucket{store: e.store, name: name}}
	if err := b.ensure(context.Background()); err != nil {
		return nil, err
	}
	return b, nil
}

func (l *localBucket) ensure() error {
	err := l.store.CreateBucket(l.name)
	if err != nil && !gofakes3.HasErrorCode(err, gofakes3.ErrBucketAlreadyExists) {
		return fmt.Errorf("create bucket %s: %w", l.name, err)
	}
	return nil
}

func (l *localBucket) ping() error {
	if ok, err := l.store.BucketExists(l.name); err != nil || !ok {
		return errors.Join(fmt.Errorf("bucket %s not found", l.name), err)
	}
	return nil
}

// put stores data under key unless the key exists, as Bucket.Put's If-None-Match does.
func (l *localBucket) put(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := newGroupPut(l.name, key, map[string]string{"Content-Type": "application/octet-stream"}, data, true)
	if err == nil {
		err = l.store.await(p)
	}
	return err
}

func (l *localBucket) get(key string) (io.ReadCloser, error) {
	obj, err := l.store.GetObject(l.name, key, nil)
	if gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return obj.Contents, nil
}

func (l *localBucket) exists(key string) (bool, error) {
	_, err := l.store.HeadObject(l.name, key)
	if gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey) {
		return false, nil
	}
	return err == nil, err
}

// deleteChunk deletes keys in one transaction, as one DeleteObjects call does.
func (l *localBucket) deleteChunk(keys []string, res *DeleteResult) error {
	out, err := l.store.DeleteMulti(l.name, keys...)
	if err != nil {
		return err
	}
	for _, e := range out.Error {
		res.Failed[e.Key] = string(e.Code) + ": " + e.Message
	}
	for _, d := range out.Deleted {
		res.Deleted = append(res.Deleted, d.Key)
	}
	return nil
}

// listAfter calls fn with the objects under prefix after startAfter, in key order, a page of up
// to MaxDeleteKeys at a time, as ListObjectsV2 pages do.
func (l *localBucket) listAfter(prefix, startAfter string, fn func([]Object) error) error {
	page := gofakes3.ListBucketPage{Marker: startAfter, HasMarker: startAfter != "", MaxKeys: MaxDeleteKeys}
	for {
		list, err := l.store.ListBucket(l.name, &gofakes3.Prefix{Prefix: prefix, HasPrefix: true}, page)
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		if len(list.Contents) > 0 {
			objs := make([]Object, len(list.Contents))
			for i, c := range list.Contents {
				objs[i] = Object{Key: c.Key, LastModified: c.LastModified.Time, Size: c.Size}
			}
			if err := fn(objs); err != nil {
				return err
			}
		}
		if !list.IsTruncated {
			return nil
		}
		page.Marker, page.HasMarker = list.NextMarker, true
	}
}
