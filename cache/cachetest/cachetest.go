// Package cachetest gives each test its own corner of the real test Redis, the single server or the
// three-master cluster: a key prefix of its own, whose keys are deleted when the test ends.
package cachetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

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

// Masters returns the addresses of the masters of rdb, sorted: one for a single server.
func Masters(t testing.TB, rdb redis.UniversalClient) []string {
	t.Helper()
	var mu sync.Mutex // ForEachMaster runs fn on the masters at once
	var addrs []string
	err := cache.ForEachMaster(context.Background(), rdb, func(_ context.Context, node *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		addrs = append(addrs, node.Options().Addr)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(addrs)
	return addrs
}

// MasterOf returns the address of the master of rdb that holds key.
func MasterOf(t testing.TB, rdb redis.UniversalClient, key string) string {
	t.Helper()
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		node, err := c.MasterForKey(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		return node.Options().Addr
	case *redis.Client:
		return c.Options().Addr
	}
	t.Fatalf("redis client %T: neither one server nor a cluster", rdb)
	return ""
}

// OnEveryMaster returns names, one for each master of rdb, whose keys (key(name)) lie on different
// masters: the first of name(0), name(1), ... to land on each. A test of a cluster that touches one
// key reaches one master, which a client talking to its seed node alone reaches as well a third of
// the time; its keys are these instead. It fails the test if a thousand names leave a master out.
func OnEveryMaster(t testing.TB, rdb redis.UniversalClient, key func(name string) string, name func(i int) string) []string {
	t.Helper()
	masters := Masters(t, rdb)
	taken := map[string]string{}
	for i := 0; i < 1000 && len(taken) < len(masters); i++ {
		n := name(i)
		if m := MasterOf(t, rdb, key(n)); taken[m] == "" {
			taken[m] = n
		}
	}
	if len(taken) < len(masters) {
		t.Fatalf("a thousand names reach %d of the %d masters", len(taken), len(masters))
	}
	names := make([]string, 0, len(masters))
	for _, m := range masters {
		names = append(names, taken[m])
	}
	return names
}

// MastersHolding counts the masters of rdb that hold a key under prefix.
func MastersHolding(t testing.TB, rdb redis.UniversalClient, prefix string) int {
	t.Helper()
	var mu sync.Mutex
	n := 0
	err := cache.ForEachMaster(context.Background(), rdb, func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, prefix+"*", 100).Iterator()
		if iter.Next(ctx) {
			mu.Lock()
			n++
			mu.Unlock()
		}
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// RefusedURL is the URL of a Redis that is not there: a local address where nothing listens, so
// every connection is refused at once.
func RefusedURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "redis://" + addr + "/0"
}

// Refused returns a client of RefusedURL that fails fast, with no retries, closed when the test ends.
func Refused(t testing.TB) redis.UniversalClient {
	t.Helper()
	rdb, err := cache.NewClient(RefusedURL(t), cache.ClientOptions{DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}
