package cache_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"pastebin/cache"
	"pastebin/cache/cachetest"
)

// Tests of the cache against the single test Redis and the test Redis Cluster alike.

// TestPutGetMarkGone: entries (and the gzip forms beside them, which Get does not read) are
// written, read, expire and are replaced by delete markers on every master of a cluster (one key alone would sit on one master, which a client talking to its
// seed node alone reaches as well, a third of the time).
func TestPutGetMarkGone(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, func(t *testing.T, kind cachetest.Kind) {
		ctx := context.Background()
		c, prefix := cachetest.NewOf(t, kind, slog.New(slog.DiscardHandler))
		rdb := cachetest.ClientOf(t, kind) // sees the cluster whatever the cache's client does
		codes := cachetest.OnEveryMaster(t, rdb, c.Key, func(i int) string { return fmt.Sprintf("code%07d", i) })
		now := time.Now()
		for _, code := range codes {
			p := cache.Paste{Code: code, Size: 2, CreatedAt: now, ExpiresAt: now.Add(time.Hour), Content: []byte("hi")}
			miss := c.Get(ctx, p.Code, now)
			if !c.Put(ctx, miss, p, time.Hour, now) {
				t.Fatalf("Put %s after a miss: not written", code)
			}
			c.PutGzipForm(ctx, p, "v", []byte("gz"), time.Hour, now)
			if l := c.Get(ctx, p.Code, now); l.Result != cache.Hit || string(l.Paste.Content) != "hi" {
				t.Fatalf("Get %s after Put: %v %q; want a hit with the content", code, l.Result, l.Paste.Content)
			}
			if gz, version := c.GzipForm(ctx, p.Code); string(gz) != "gz" || version != "v" {
				t.Fatalf("GzipForm %s after Put: %q of version %q; want the form", code, gz, version)
			}
			if l := c.Get(ctx, p.Code, p.ExpiresAt.Add(cache.SkewMargin)); l.Result != cache.Gone {
				t.Errorf("Get %s past the expiry: %v, want Gone", code, l.Result)
			}
			if err := c.MarkGone(ctx, p.Code, "owner"); err != nil {
				t.Fatal(err)
			}
			if c.Put(ctx, miss, p, time.Hour, now) { // a reader that read the database before the delete
				t.Errorf("Put %s over a delete's marker: written", code)
			}
			if l := c.Get(ctx, p.Code, now); l.Result != cache.Gone || l.Reason != "owner" {
				t.Errorf("Get %s after MarkGone and a late Put: %v %q, want Gone \"owner\"", code, l.Result, l.Reason)
			}
			if gz, _ := c.GzipForm(ctx, p.Code); gz != nil {
				t.Errorf("GzipForm %s after MarkGone: %q, want none", code, gz)
			}
		}
		if n, want := cachetest.MastersHolding(t, rdb, prefix), len(cachetest.Masters(t, rdb)); n != want {
			t.Errorf("the markers are on %d masters, want all %d", n, want)
		}
		if err := c.Ping(ctx); err != nil {
			t.Errorf("Ping: %v", err)
		}
	})
}

// TestForgetAcrossSlots: cleanup drops a whole batch in one pipeline. On a cluster the batch's keys
// lie in many slots on every master: the pipeline must reach them all (go-redis splits it by node).
func TestForgetAcrossSlots(t *testing.T) {
	t.Parallel()
	cachetest.ForEach(t, func(t *testing.T, kind cachetest.Kind) {
		ctx := context.Background()
		c, prefix := cachetest.NewOf(t, kind, slog.New(slog.DiscardHandler))
		now := time.Now()
		var codes []string
		for i := range 200 {
			code := fmt.Sprintf("code%07d", i)
			codes = append(codes, code)
			c.Put(ctx, c.Get(ctx, code, now), cache.Paste{Code: code, CreatedAt: now}, time.Hour, now)
		}
		if kind == cachetest.Cluster {
			if n := cachetest.MastersHolding(t, cachetest.ClientOf(t, kind), prefix); n < 3 {
				t.Fatalf("the keys are on %d masters, want all 3: the test would prove nothing", n)
			}
		}
		keep := codes[len(codes)-1]
		if err := c.Forget(ctx, codes[:len(codes)-1]); err != nil {
			t.Fatalf("Forget: %v", err)
		}
		if left := cachetest.Keys(t, cachetest.ClientOf(t, kind), prefix); !slices.Equal(left, []string{c.Key(keep)}) {
			t.Errorf("after Forget, Redis holds %d keys (%.3v), want only %s", len(left), left, c.Key(keep))
		}
	})
}

// TestPingEveryMaster: /readyz says Redis is degraded when one master of a cluster cannot be
// reached, although the others answer.
func TestPingEveryMaster(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(cachetest.URL(t, cachetest.Cluster))
	if err != nil {
		t.Fatal(err)
	}
	unreachable := u.Query()["addr"][0]
	c := refusingCache(t, u.String(), "pbtest:", cache.ClientOptions{}, func(addr string) bool { return addr == unreachable })
	err = c.Ping(context.Background())
	if err == nil || !strings.Contains(err.Error(), unreachable) {
		t.Errorf("Ping with master %s unreachable: %v, want an error naming it", unreachable, err)
	}
}

// TestCallerGivingUpIsNoOutage: a lookup whose request was abandoned (the client hung up) fails, but
// Redis is fine: the cache neither logs an outage nor reports itself unreachable.
func TestCallerGivingUpIsNoOutage(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	c, _ := cachetest.NewOf(t, cachetest.Single, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if l := c.Get(ctx, "abcdefghijk", time.Now()); l.Result != cache.Miss {
		t.Fatalf("Get with the request gone: %v, want a miss", l.Result)
	}
	if !c.Reachable() || strings.Contains(logs.String(), "redis unavailable") {
		t.Errorf("a request that gave up counted as a Redis outage (reachable %v): %s", c.Reachable(), logs.String())
	}
}

// TestEntryFromBeforeEncryption: an entry a replica wrote before encrypted pastes existed (version
// 2, before compression, or 3) is a miss: the paste may be an encrypted one, whose entry would say
// nothing of its format, and its readers would take the ciphertext for the text. So is one with a
// JSON header (version 4, whose header would say it), which the binary header replaced.
func TestEntryFromBeforeEncryption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := cachetest.New(t, slog.New(slog.DiscardHandler))
	rdb := cachetest.Client(t)
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(info, "run_id:")
	runID, _, _ := strings.Cut(rest, "\r\n")
	now := time.Now().UTC().Truncate(time.Second)
	header := fmt.Sprintf(`{"code":"oldentry123","hash":"AQI=","key":"blobs/01/x","size":2,"created":%q,"expires":%q,"srv":%q}`,
		now.Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339), runID)
	for _, version := range []byte{2, 3, 4} {
		raw := append([]byte{version, 0, 0, 0, byte(len(header))}, header...)
		raw = append(raw, "hi"...)
		if err := rdb.Set(ctx, c.Key("oldentry123"), raw, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		if l := c.Get(ctx, "oldentry123", now); l.Result != cache.Miss {
			t.Errorf("Get of a version %d entry: %v, want a miss", version, l.Result)
		}
	}
}
