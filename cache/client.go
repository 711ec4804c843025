package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClientOptions are what a process sets over its Redis URL; a zero field keeps the URL's value or
// go-redis's default. With a cluster they hold for the client of every node.
type ClientOptions struct {
	DialTimeout, ReadTimeout, WriteTimeout, PoolTimeout time.Duration
	MaxRetries                                          int // -1: none
	PoolSize                                            int // connections per node
	DialerRetries                                       int
	Dialer                                              func(ctx context.Context, network, addr string) (net.Conn, error)
}

// clusterSchemes are the schemes that name a Redis Cluster, and the scheme go-redis reads them as.
var clusterSchemes = map[string]string{"redis+cluster": "redis", "rediss+cluster": "rediss"}

// OpenURL returns the cache of the Redis that rawURL names, with every key under prefix: one server
// (Open) or a Redis Cluster (OpenCluster), as ParseURL tells. The client dials lazily: OpenURL
// never fails because Redis is down.
func OpenURL(rawURL string, o ClientOptions, prefix string, logger *slog.Logger) (*Cache, error) {
	single, cluster, err := ParseURL(rawURL, o)
	switch {
	case err != nil:
		return nil, err
	case cluster != nil:
		return OpenCluster(cluster, prefix, logger), nil
	}
	return Open(single, prefix, logger), nil
}

// NewClient returns a bare client of the Redis that rawURL names, for tools and tests.
func NewClient(rawURL string, o ClientOptions) (redis.UniversalClient, error) {
	single, cluster, err := ParseURL(rawURL, o)
	switch {
	case err != nil:
		return nil, err
	case cluster != nil:
		return redis.NewClusterClient(cluster), nil
	}
	return redis.NewClient(single), nil
}

// ParseURL reads the Redis URL rawURL, with o over it, as the options of one server or of a Redis
// Cluster (the other is nil). One server: redis://host:port/db (or rediss://), read by go-redis's
// ParseURL. A Redis Cluster: redis+cluster://host:port (or rediss+cluster://), or any URL with
// addr= parameters, read by go-redis's ParseClusterURL: the host and every addr= are seed nodes,
// from which the client learns the whole cluster.
func ParseURL(rawURL string, o ClientOptions) (*redis.Options, *redis.ClusterOptions, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, err
	}
	scheme, cluster := clusterSchemes[u.Scheme]
	if !cluster && !u.Query().Has("addr") {
		opts, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, nil, err
		}
		o.apply(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.PoolTimeout,
			&opts.MaxRetries, &opts.PoolSize, &opts.DialerRetries, &opts.Dialer)
		return opts, nil, nil
	}
	if cluster {
		u.Scheme = scheme
	}
	if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
		return nil, nil, errors.New("a Redis Cluster has database 0 only")
	}
	u.Path = ""
	opts, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, nil, err
	}
	o.apply(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.PoolTimeout,
		&opts.MaxRetries, &opts.PoolSize, &opts.DialerRetries, &opts.Dialer)
	return nil, opts, nil
}

// apply sets the fields of go-redis's options (one server's or a cluster's) that o sets.
func (o ClientOptions) apply(dial, read, write, pool *time.Duration, retries, size, dialRetries *int,
	dialer *func(context.Context, string, string) (net.Conn, error)) {
	set(dial, o.DialTimeout)
	set(read, o.ReadTimeout)
	set(write, o.WriteTimeout)
	set(pool, o.PoolTimeout)
	set(retries, o.MaxRetries)
	set(size, o.PoolSize)
	set(dialRetries, o.DialerRetries)
	if o.Dialer != nil {
		*dialer = o.Dialer
	}
}

func set[T comparable](to *T, v T) {
	var zero T
	if v != zero {
		*to = v
	}
}

// ForEachMaster calls fn with the client of every master: the client itself for one server, each
// master of a cluster in turn for a cluster (SCAN, for one, sees only the keys of the node it runs on).
func ForEachMaster(ctx context.Context, rdb redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	}
	return fmt.Errorf("redis client %T: neither one server nor a cluster", rdb)
}
