package cache_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"pastebin/cache"
)

// redisServer is a redis-server of the test's own, which it can restart on the same data.
type redisServer struct {
	t    *testing.T
	dir  string
	port int
}

// startRedis starts a redis-server that keeps its data in a snapshot file of the test's folder, as
// a stock Redis does, on a port above Linux's ephemeral range.
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	s := &redisServer{t: t, dir: t.TempDir()}
	for range 20 {
		s.port = 62000 + rand.IntN(1500)
		if s.start() == nil {
			t.Cleanup(func() { s.stop() })
			return s
		}
	}
	t.Fatal("no free port for a redis-server of the test's own")
	return nil
}

func (s *redisServer) start() error {
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--daemonize", "yes", "--pidfile", s.dir+"/redis.pid",
		"--logfile", s.dir+"/redis.log")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("redis-server: %v: %s", err, out)
	}
	rdb := s.client()
	defer rdb.Close()
	for range 100 {
		if rdb.Ping(context.Background()).Err() == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on port %d did not answer", s.port)
}

func (s *redisServer) options() *redis.Options {
	return &redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(s.port), MaxRetries: 3}
}

func (s *redisServer) client() *redis.Client { return redis.NewClient(s.options()) }

// stop shuts the server down without saving: what it holds on disk is its last SAVE.
func (s *redisServer) stop() {
	rdb := s.client()
	defer rdb.Close()
	_ = rdb.ShutdownNoSave(context.Background()).Err()
}

// TestEntryFromAnotherIncarnationIsMiss: a Redis that persists its data snapshots an entry, a delete
// then replaces it with its marker, and Redis restarts from the snapshot: the entry is back and the
// marker is not. The entry was written to the previous incarnation, so no replica serves it; a new
// fill replaces it.
func TestEntryFromAnotherIncarnationIsMiss(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	ctx, now, logger := context.Background(), time.Now(), slog.New(slog.DiscardHandler)
	reader := cache.Open(srv.options(), "pb:", logger)
	deleter := cache.Open(srv.options(), "pb:", logger)
	t.Cleanup(func() { reader.Close(); deleter.Close() })
	p := cache.Paste{Code: "abcdefghijk", Size: 5, Content: []byte("hello"), CreatedAt: now}

	reader.Put(ctx, reader.Get(ctx, p.Code, now), p, time.Hour, now)
	if l := reader.Get(ctx, p.Code, now); l.Result != cache.Hit {
		t.Fatalf("after the fill: %v, want a hit", l.Result)
	}
	admin := srv.client()
	defer admin.Close()
	if err := admin.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := deleter.MarkGone(ctx, p.Code, "owner"); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	if raw, err := admin.Get(ctx, reader.Key(p.Code)).Bytes(); err != nil || raw[0] == 0 {
		t.Fatalf("after the restart Redis holds %q, %v: not the old entry, the test proves nothing", raw, err)
	}

	l := reader.Get(ctx, p.Code, now)
	if l.Result != cache.Miss {
		t.Fatalf("the entry of the previous incarnation: %v, want a miss", l.Result)
	}
	reader.Put(ctx, l, p, time.Hour, now)
	if l := reader.Get(ctx, p.Code, now); l.Result != cache.Hit {
		t.Errorf("a fill after the restart: %v, want a hit", l.Result)
	}
}
