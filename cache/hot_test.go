package cache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"pastebin/cache"
	"pastebin/cache/cachetest"
)

// TestHotContent: two replicas count the distinct creators of a content together, from many
// goroutines at once; one client creating the same content again is still one; the ranking puts
// the hottest first; no key or member holds a client's address; everything is forgotten with the
// window. On one server and on a cluster, whose scripts must keep their keys in one slot.
func TestHotContent(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, func(t *testing.T, kind cachetest.Kind) {
		ctx := context.Background()
		logger := slog.New(slog.DiscardHandler)
		a, prefix := cachetest.NewOf(t, kind, logger)
		b, err := cache.OpenURL(cachetest.URL(t, kind), cache.ClientOptions{}, prefix, logger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		const window = 700 * time.Millisecond
		replicas := []*cache.HotContent{a.NewHotContent(window), b.NewHotContent(window)}
		spam, twice := sha256.Sum256([]byte("buy now")), sha256.Sum256([]byte("my notes"))

		var wg sync.WaitGroup
		for i := range 30 {
			wg.Go(func() {
				client := fmt.Sprintf("203.0.113.%d", i)
				for range 2 { // each client twice, once through each replica
					if _, err := replicas[i%2].Add(ctx, spam[:], client); err != nil {
						t.Error(err)
					}
					if _, err := replicas[(i+1)%2].Add(ctx, spam[:], client); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		for range 2 {
			if n, err := replicas[1].Add(ctx, twice[:], "198.51.100.7"); err != nil || n != 1 {
				t.Fatalf("one client creating the same content again: %d clients, %v; want 1", n, err)
			}
		}
		top, err := replicas[0].Top(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := []cache.Hot{{Hash: spam[:], Clients: 30}, {Hash: twice[:], Clients: 1}}
		if len(top) != 2 || !bytes.Equal(top[0].Hash, want[0].Hash) || top[0].Clients != 30 ||
			!bytes.Equal(top[1].Hash, want[1].Hash) || top[1].Clients != 1 {
			t.Fatalf("top: %+v; want %+v", top, want)
		}
		if top, err := replicas[1].Top(ctx, 1); err != nil || len(top) != 1 || top[0].Clients != 30 {
			t.Errorf("top 1: %+v, %v", top, err)
		}
		checkNoAddresses(t, cachetest.ClientOf(t, kind), prefix, "203.0.113.", "198.51.100.")

		time.Sleep(window + 200*time.Millisecond)
		if top, err := replicas[0].Top(ctx, 10); err != nil || len(top) != 0 {
			t.Errorf("a window later: %+v, %v; want nothing", top, err)
		}
		var left []string
		for _, k := range cachetest.Keys(t, cachetest.ClientOf(t, kind), prefix) {
			if !strings.HasSuffix(k, ":key") { // the client key outlives the window, alone
				left = append(left, k)
			}
		}
		if len(left) != 0 {
			t.Errorf("a window later, keys left: %q", left)
		}
		if n, err := replicas[0].Add(ctx, spam[:], "203.0.113.1"); err != nil || n != 1 {
			t.Errorf("a create after the window: %d clients, %v; want 1", n, err)
		}
	})
}

// checkNoAddresses fails the test if a key under prefix, or a member of a sorted set there, holds
// any of the addresses' beginnings.
func checkNoAddresses(t *testing.T, rdb redis.UniversalClient, prefix string, addrs ...string) {
	t.Helper()
	ctx := context.Background()
	for _, k := range cachetest.Keys(t, rdb, prefix) {
		members := []string{k}
		if typ, _ := rdb.Type(ctx, k).Result(); typ == "zset" {
			ms, err := rdb.ZRange(ctx, k, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			members = append(members, ms...)
		}
		for _, m := range members {
			for _, a := range addrs {
				if strings.Contains(m, a) {
					t.Errorf("key %s holds an address: %q", k, m)
				}
			}
		}
	}
}

// TestHotContentOutage: with Redis away, Add fails at once, and keeps failing without waiting on
// Redis for a second; the caller (the create) goes on.
func TestHotContentOutage(t *testing.T) {
	t.Parallel()
	c := cache.Open(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1},
		"pbtest:", slog.New(slog.DiscardHandler))
	t.Cleanup(func() { c.Close() })
	h := c.NewHotContent(time.Minute)
	hash := sha256.Sum256([]byte("x"))
	if _, err := h.Add(context.Background(), hash[:], "203.0.113.1"); err == nil {
		t.Fatal("Add with Redis away: no error")
	}
	start := time.Now()
	for range 100 {
		if _, err := h.Add(context.Background(), hash[:], "203.0.113.1"); err == nil {
			t.Fatal("Add with Redis away: no error")
		}
	}
	if took := time.Since(start); took > 50*time.Millisecond {
		t.Errorf("100 Adds right after a failure took %v: they waited on Redis", took)
	}
}

// BenchmarkHotContentAdd measures what the spam signal adds to a create: one script on the test
// Redis, distinct clients on a few contents.
func BenchmarkHotContentAdd(b *testing.B) {
	c, _ := cachetest.New(b, slog.New(slog.DiscardHandler))
	h := c.NewHotContent(10 * time.Minute)
	hashes := make([][32]byte, 16)
	for i := range hashes {
		hashes[i] = sha256.Sum256([]byte(fmt.Sprint(i)))
	}
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		if _, err := h.Add(ctx, hashes[i%16][:], fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHotContentTopCountsPastStaleRanks: the ranking holds each content's count as of its last
// create. 150 contents ranked at 3 clients whose marks have all aged out stand before one created
// by 2 clients since: Top counts past them, more than one recount's worth, to find it, and drops
// them from the ranking.
func TestHotContentTopCountsPastStaleRanks(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, func(t *testing.T, kind cachetest.Kind) {
		ctx := context.Background()
		c, prefix := cachetest.NewOf(t, kind, slog.New(slog.DiscardHandler))
		const window = 700 * time.Millisecond
		hot := c.NewHotContent(window)
		add := func(content string, clients int) {
			hash := sha256.Sum256([]byte(content))
			for i := range clients {
				if _, err := hot.Add(ctx, hash[:], fmt.Sprintf("203.0.113.%d", i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := range 150 {
			add(fmt.Sprintf("stale %d", i), 3)
		}
		time.Sleep(window + 200*time.Millisecond)
		add("fresh", 2)
		top, err := hot.Top(ctx, 1)
		fresh := sha256.Sum256([]byte("fresh"))
		if err != nil || len(top) != 1 || !bytes.Equal(top[0].Hash, fresh[:]) || top[0].Clients != 2 {
			t.Fatalf("top 1 behind 150 stale ranks: %+v, %v; want the fresh content, 2 clients", top, err)
		}
		rdb := cachetest.ClientOf(t, kind)
		if n, err := rdb.ZCard(ctx, prefix+"hot:{hot}:top").Result(); err != nil || n != 1 {
			t.Errorf("the ranking holds %d contents after the recount, %v; want 1", n, err)
		}
	})
}
