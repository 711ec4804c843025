package blob

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// DeleteResult says which keys of a Delete call are gone and which are not, with why.
type DeleteResult struct {
	Deleted []string
	Failed  map[string]string // key → error
}

// Delete removes keys with one DeleteObjects call per MaxDeleteKeys keys. A key that does not exist
// counts as deleted, as S3 reports it. When a whole call fails, every key of that call is in Failed
// and the error is returned too.
func (b *Bucket) Delete(ctx context.Context, keys []string) (DeleteResult, error) {
	res := DeleteResult{Failed: map[string]string{}}
	var firstErr error
	for start := 0; start < len(keys); start += MaxDeleteKeys {
		chunk := keys[start:min(start+MaxDeleteKeys, len(keys))]
		if err := b.deleteChunk(ctx, chunk, &res); err != nil {
			for _, k := range chunk {
				res.Failed[k] = err.Error()
			}
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	return res, firstErr
}

func (b *Bucket) deleteChunk(ctx context.Context, keys []string, res *DeleteResult) error {
	if b.local != nil {
		return b.local.deleteChunk(keys, res)
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	objects := make([]types.ObjectIdentifier, len(keys))
	for i := range keys {
		objects[i] = types.ObjectIdentifier{Key: &keys[i]}
	}
	out, err := b.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: &b.name,
		Delete: &types.Delete{Objects: objects, Quiet: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("delete %d objects: %w", len(keys), err)
	}
	// Quiet mode lists only failures, but some servers list every key: trust the error list alone.
	failed := make(map[string]bool, len(out.Errors))
	for _, e := range out.Errors {
		k := aws.ToString(e.Key)
		failed[k] = true
		res.Failed[k] = aws.ToString(e.Code) + ": " + aws.ToString(e.Message)
	}
	for _, k := range keys {
		if !failed[k] {
			res.Deleted = append(res.Deleted, k)
		}
	}
	return nil
}

// Object is one listed blob.
type Object struct {
	Key          string
	LastModified time.Time
	Size         int64
}

// List calls fn with every object under prefix, in key order, one page of up to 1000 at a time.
// A non-nil error from fn stops the listing and is returned.
func (b *Bucket) List(ctx context.Context, prefix string, fn func([]Object) error) error {
	return b.ListAfter(ctx, prefix, "", fn)
}

// ListAfter is List from the first key after startAfter on; "" starts at the beginning. Listings of
// several key ranges can then run side by side.
func (b *Bucket) ListAfter(ctx context.Context, prefix, startAfter string, fn func([]Object) error) error {
	if b.local != nil {
		return b.local.listAfter(prefix, startAfter, fn)
	}
	in := &s3.ListObjectsV2Input{Bucket: &b.name, Prefix: &prefix}
	if startAfter != "" {
		in.StartAfter = &startAfter
	}
	p := s3.NewListObjectsV2Paginator(b.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		objs := make([]Object, len(page.Contents))
		for i, o := range page.Contents {
			objs[i] = Object{Key: aws.ToString(o.Key), LastModified: aws.ToTime(o.LastModified), Size: aws.ToInt64(o.Size)}
		}
		if err := fn(objs); err != nil {
			return err
		}
	}
	return nil
}
