package cache

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// servers knows which incarnation of each Redis server this process talks to: its INFO run_id,
// which changes whenever the server restarts, and differs between a master and the replica that
// replaces it. Entries are stamped with it, so an entry that comes back from a snapshot (a Redis
// that persists its data, restarted) or from a failover is never trusted: the delete marker that
// replaced it may not have come back with it (invariant 5).
type servers struct {
	mu  sync.RWMutex
	ids map[string]string // run_id by server address; "" is the only server of a non-cluster client
}

func newServers() *servers { return &servers{ids: map[string]string{}} }

// onConnect returns the hook that learns the run_id of the server at addr on every new connection,
// before the connection is used: after a restart every connection is new, so no command reaches
// the new incarnation while this process still believes in the old one.
func (s *servers) onConnect(addr string, next func(context.Context, *redis.Conn) error) func(context.Context, *redis.Conn) error {
	return func(ctx context.Context, cn *redis.Conn) error {
		if next != nil {
			if err := next(ctx, cn); err != nil {
				return err
			}
		}
		info, err := cn.Info(ctx, "server").Result()
		if err != nil {
			return fmt.Errorf("redis server identity: %w", err)
		}
		id := runID(info)
		if id == "" {
			return fmt.Errorf("redis server identity: no run_id in INFO server")
		}
		s.mu.Lock()
		s.ids[addr] = id
		s.mu.Unlock()
		return nil
	}
}

func (s *servers) get(addr string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ids[addr]
}

// runID reads run_id from the text of INFO server.
func runID(info string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	return ""
}

// Open returns the cache of the Redis server opts describe, with every key under prefix. The client
// dials lazily: Open never fails because Redis is down.
func Open(opts *redis.Options, prefix string, logger *slog.Logger) *Cache {
	ids := newServers()
	o := *opts
	o.OnConnect = ids.onConnect("", opts.OnConnect)
	rdb := redis.NewClient(&o)
	return &Cache{rdb: rdb, prefix: prefix, logger: logger,
		serverOf: func(context.Context, string) string { return ids.get("") }}
}

// OpenCluster returns the cache of a Redis Cluster: each node's incarnation is tracked by its
// address, and an entry is judged by the master that holds its key.
func OpenCluster(opts *redis.ClusterOptions, prefix string, logger *slog.Logger) *Cache {
	ids := newServers()
	o := *opts
	next := opts.NewClient
	o.NewClient = func(no *redis.Options) *redis.Client {
		no.OnConnect = ids.onConnect(no.Addr, no.OnConnect)
		if next != nil {
			return next(no)
		}
		return redis.NewClient(no)
	}
	rdb := redis.NewClusterClient(&o)
	serverOf := func(ctx context.Context, key string) string {
		node, err := rdb.MasterForKey(ctx, key)
		if err != nil {
			return ""
		}
		return ids.get(node.Options().Addr)
	}
	return &Cache{rdb: rdb, prefix: prefix, logger: logger, serverOf: serverOf}
}
