// Package blobtest gives each test its own bucket on a real S3 server: versitygw (which checks
// signatures) when make test started one, and the embedded gofakes3 server otherwise.
package blobtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"pastebin/blob"
)

// Config returns the configuration of a new, not yet created bucket on the test S3 server.
func Config(t testing.TB) blob.Config {
	t.Helper()
	endpoint := os.Getenv("PASTEBIN_TEST_S3_ENDPOINT")
	if endpoint == "" {
		t.Fatal("PASTEBIN_TEST_S3_ENDPOINT is not set: run the tests with `make test`, which starts an S3 server")
	}
	return blob.Config{
		Endpoint: endpoint, Region: "us-east-1", Bucket: "pb-test-" + randomHex(6), PathStyle: true,
		AccessKeyID:     os.Getenv("PASTEBIN_TEST_S3_ACCESS_KEY_ID"),
		SecretAccessKey: os.Getenv("PASTEBIN_TEST_S3_SECRET_ACCESS_KEY"),
	}
}

// New returns a fresh bucket of its own on the test S3 server, emptied and removed when the test ends.
func New(t testing.TB) *blob.Bucket {
	t.Helper()
	return Open(t, Config(t))
}

// Open opens the bucket of cfg and removes it when the test ends.
func Open(t testing.TB, cfg blob.Config) *blob.Bucket {
	t.Helper()
	b, err := blob.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Remove(t, cfg) })
	return b
}

// Embedded returns a bucket on an in-process gofakes3 server persisting under a temporary folder,
// and the server, which a test may stop to see S3 go away.
func Embedded(t testing.TB) (*blob.Bucket, *blob.Embedded) {
	t.Helper()
	e, err := blob.StartEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	cfg := blob.Config{Endpoint: e.Endpoint, Region: "us-east-1", Bucket: "pastebin", PathStyle: true,
		AccessKeyID: "embedded", SecretAccessKey: "embedded"}
	b, err := blob.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b, e
}

// InProcess returns a bucket of an embedded server's store under a temporary folder, used in
// process, as serve uses the server it runs.
func InProcess(t testing.TB) *blob.Bucket {
	t.Helper()
	e, err := blob.StartEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	b, err := e.Bucket("pastebin")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Keys lists every key in the bucket.
func Keys(t testing.TB, b *blob.Bucket) []string {
	t.Helper()
	var keys []string
	err := b.List(context.Background(), "", func(objs []blob.Object) error {
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// Remove empties and deletes the bucket of cfg.
func Remove(t testing.TB, cfg blob.Config) {
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(cfg.Region), config.WithBaseEndpoint(cfg.Endpoint),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, "")))
	if err != nil {
		t.Errorf("remove bucket: %v", err)
		return
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) { o.UsePathStyle = true })
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: &cfg.Bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return // already gone, or the server is down for this test: nothing to tidy
		}
		var ids []types.ObjectIdentifier
		for _, o := range page.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		if len(ids) > 0 {
			_, _ = client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &cfg.Bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		}
	}
	_, _ = client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &cfg.Bucket})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
