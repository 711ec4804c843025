// Package cachetest gives each test its own corner of the real test Redis, the single server or the
// three-master cluster: a key prefix of its own, whose keys are deleted when the test ends.
package cachetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"pastebin/cache"
)

// Kind is a kind of test Redis.
type Kind string

// The test Redis servers that scripts/services.sh starts.
const (
	Single  Kind = "single"  // one server: PASTEBIN_REDIS_URL
	Cluster Kind = "cluster" // three masters: PASTEBIN_TEST_REDIS_CLUSTER_URL
)

// Kinds are both, for tests that run against each.
var Kinds = []Kind{Single, Cluster}

// ForEach runs test as a parallel subtest against each kind of test Redis.
func ForEach(t *testing.T, test func(t *testing.T, kind Kind)) {
	for _, kind := range Kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			test(t, kind)
		})
	}
}

// URL is the URL of the test Redis of kind.
func URL(t testing.TB, kind Kind) string {
	t.Helper()
	name := map[Kind]string{Single: "PASTEBIN_REDIS_URL", Cluster: "PASTEBIN_TEST_REDIS_CLUSTER_URL"}[kind]
	u := os.Getenv(name)
	if u == "" {
		t.Fatalf("%s is not set: run the tests with `make test`, which starts Redis and the Redis Cluster", name)
	}
	return u
}

// Options are the options of a new client of the single test Redis.
func Options(t testing.TB) *redis.Options {
	t.Helper()
	opts, err := redis.ParseURL(URL(t, Single))
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// Client returns a client of the single test Redis.
func Client(t testing.TB) redis.UniversalClient { return ClientOf(t, Single) }

// ClientOf returns a client of the test Redis of kind, closed when the test ends.
func ClientOf(t testing.TB, kind Kind) redis.UniversalClient {
	t.Helper()
	rdb, err := cache.NewClient(URL(t, kind), cache.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// New returns a cache on the single test Redis whose keys are this test's alone, and their prefix.
func New(t testing.TB, logger *slog.Logger) (*cache.Cache, string) { return NewOf(t, Single, logger) }

// NewOf returns a cache on the test Redis of kind whose keys are this test's alone, and their
// prefix. cache.Client gives its client.
func NewOf(t testing.TB, kind Kind, logger *slog.Logger) (*cache.Cache, string) {
	t.Helper()
	rdb := ClientOf(t, kind)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "pbtest:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		for _, k := range Keys(t, rdb, prefix) {
			rdb.Del(context.Background(), k)
		}
	})
	c, err := cache.OpenURL(URL(t, kind), cache.ClientOptions{}, prefix, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, prefix
}

// Keys lists every key under prefix, with SCAN (never KEYS, which blocks the server) on every
// master: on a cluster SCAN sees only the keys of the node it runs on.
func Keys(t testing.TB, rdb redis.UniversalClient, prefix string) []string {
	t.Helper()
	var mu sync.Mutex // ForEachMaster runs fn on the masters at once
	var keys []string
	err := cache.ForEachMaster(context.Background(), rdb, func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
