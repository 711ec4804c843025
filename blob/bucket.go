// Package blob is the S3 side of the pastebin: put, get, batch delete and list of content blobs.
package blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// MaxDeleteKeys is the most keys S3 takes in one DeleteObjects call. Some servers accept more; AWS
// refuses them, so batches are capped here whatever the server.
const MaxDeleteKeys = 1000

// Prefix is where content blobs live in the bucket; the orphan sweeper lists only under it.
const Prefix = "blobs/"

// ErrNotFound says the object does not exist.
var ErrNotFound = errors.New("blob not found")

// Config says which S3 bucket to use and how to reach it.
type Config struct {
	Endpoint        string // empty: AWS itself
	Region          string
	Bucket          string
	AccessKeyID     string // empty: the SDK's default credential chain
	SecretAccessKey string
	PathStyle       bool
	Timeout         time.Duration // per request; 0 means 30s
}

// Bucket is the S3 bucket holding content blobs.
type Bucket struct {
	client  *s3.Client
	name    string
	timeout time.Duration
	local   *localBucket // the embedded server's store in this process, instead of client
}

// newRetryer retries a request twice, quickly: that smooths over a dropped keep-alive connection;
// more would only hold a request when S3 is really down. It also retries
// ExistingObjectIsDirectory: no key of ours is a directory, and a file-backed server
// (versitygw's posix backend) answers it when a put races a delete that removed the prefix folders
// the put was creating (versity/versitygw#1988). Puts are conditional (If-None-Match), so a retry
// never overwrites.
func newRetryer() aws.Retryer {
	standard := retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3; o.MaxBackoff = 200 * time.Millisecond })
	return retry.AddWithErrorCodes(standard, "ExistingObjectIsDirectory")
}

// maxIdleConns is how many idle connections to S3 the client keeps. The SDK's default keeps 10 and
// closes the rest, so past 10 puts at once (32 clients creating pastes) most puts dialed anew, and
// each left a socket in TIME_WAIT: a cost on every put, and at a thousand a second over loopback,
// no ports left within a minute. Idle connections still close after the transport's idle timeout.
const maxIdleConns = 128

// newHTTPClient is the SDK's HTTP client with room for maxIdleConns idle connections to the host.
func newHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns, t.MaxIdleConnsPerHost = maxIdleConns, maxIdleConns
	})
}

// Open connects to the bucket of cfg, creating it if it does not exist.
func Open(ctx context.Context, cfg Config) (*Bucket, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(cfg.Region),
		config.WithRetryer(newRetryer),
		config.WithHTTPClient(newHTTPClient()),
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, "")))
	}
	if cfg.Endpoint != "" {
		opts = append(opts, config.WithBaseEndpoint(cfg.Endpoint))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3 config: %w", err)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.UsePathStyle = cfg.PathStyle
		// Only the checksums S3 requires: portable to every S3 clone we tried.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	b := &Bucket{client: client, name: cfg.Bucket, timeout: cfg.Timeout}
	if b.timeout == 0 {
		b.timeout = 30 * time.Second
	}
	if err := b.ensure(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.name }

func (b *Bucket) ensure(ctx context.Context) error {
	if b.local != nil {
		return b.local.ensure()
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	if _, err := b.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &b.name}); err == nil {
		return nil
	}
	_, err := b.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b.name})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
		return fmt.Errorf("create bucket %s: %w", b.name, err)
	}
	return nil
}

// Ping checks that the bucket answers.
func (b *Bucket) Ping(ctx context.Context) error {
	if b.local != nil {
		return b.local.ping()
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := b.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &b.name}); err != nil {
		return fmt.Errorf("head bucket %s: %w", b.name, err)
	}
	return nil
}

// NewKey returns a fresh, never reused key for content with the given SHA-256:
// blobs/<first two hex digits>/<hash>.<random>. A key is never reused, so deleting an old generation
// of some content cannot remove a newer upload of it. Every upload of a hash shares the prefix
// blobs/xx/<hash>, and the two-digit level keeps folders of file-backed S3 servers a sensible size.
func NewKey(hash []byte) (string, error) {
	var r [12]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("draw blob key: %w", err)
	}
	h := hex.EncodeToString(hash)
	return Prefix + h[:2] + "/" + h + "." + hex.EncodeToString(r[:]), nil
}

// Put stores data under key, refusing to overwrite an existing object.
func (b *Bucket) Put(ctx context.Context, key string, data []byte) error {
	if b.local != nil {
		if err := b.local.put(ctx, key, data); err != nil {
			return fmt.Errorf("put %s: %w", key, err)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	_, err := b.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        &b.name,
		Key:           &key,
		Body:          bytes.NewReader(data), // seekable: plain-HTTP endpoints cannot sign a stream
		ContentLength: aws.Int64(int64(len(data))),
		ContentType:   aws.String("application/octet-stream"),
		IfNoneMatch:   aws.String("*"),
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// Get returns the object under key. The caller closes it.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if b.local != nil {
		return b.local.get(key)
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.name, Key: &key})
	if isNotFound(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return out.Body, nil
}

// Exists reports whether an object is stored under key.
func (b *Bucket) Exists(ctx context.Context, key string) (bool, error) {
	if b.local != nil {
		return b.local.exists(key)
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	_, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.name, Key: &key})
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("head %s: %w", key, err)
	}
	return true, nil
}

func isNotFound(err error) bool {
	var noKey *types.NoSuchKey
	var notFound *types.NotFound
	if errors.As(err, &noKey) || errors.As(err, &notFound) {
		return true
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchKey" {
		return true
	}
	var respErr interface{ HTTPStatusCode() int }
	return errors.As(err, &respErr) && respErr.HTTPStatusCode() == http.StatusNotFound
}
