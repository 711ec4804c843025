// Package cachetest gives each test its own corner of the real test Redis: a key prefix of its own,
// whose keys are deleted when the test ends.
package cachetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"pastebin/cache"
)

// Options are the options of a new client of the test Redis.
func Options(t testing.TB) *redis.Options {
	t.Helper()
	u := os.Getenv("PASTEBIN_REDIS_URL")
	if u == "" {
		t.Fatal("PASTEBIN_REDIS_URL is not set: run the tests with `make test`, which starts Redis")
	}
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// Client returns a client of the test Redis.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(Options(t))
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// New returns a cache whose keys are this test's alone, and the prefix they share.
func New(t testing.TB, logger *slog.Logger) (*cache.Cache, string) {
	t.Helper()
	rdb := Client(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "pbtest:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		for _, k := range Keys(t, rdb, prefix) {
			rdb.Del(context.Background(), k)
		}
	})
	c := cache.Open(Options(t), prefix, logger)
	t.Cleanup(func() { c.Close() })
	return c, prefix
}

// Keys lists every key under prefix, with SCAN (never KEYS, which blocks the server).
func Keys(t testing.TB, rdb redis.UniversalClient, prefix string) []string {
	t.Helper()
	var keys []string
	iter := rdb.Scan(context.Background(), 0, prefix+"*", 1000).Iterator()
	for iter.Next(context.Background()) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}
