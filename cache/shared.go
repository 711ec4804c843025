package cache

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Record is one value, as JSON, that the replicas share through Redis under a name: one replica
// writes it, every replica reads it. It lives for its time to live after the last write.
type Record struct {
	rdb redis.UniversalClient
	key string
	ttl time.Duration
}

// NewRecord returns the shared record name.
func (c *Cache) NewRecord(name string, ttl time.Duration) *Record {
	return &Record{rdb: c.rdb, key: c.prefix + "record:" + name, ttl: ttl}
}

// Load reads the record into v. It reports false, and leaves v alone, when there is none.
func (r *Record) Load(ctx context.Context, v any) (bool, error) {
	raw, err := r.rdb.Get(ctx, r.key).Bytes()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(raw, v)
}

// Store writes v as the record.
func (r *Record) Store(ctx context.Context, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return r.rdb.Set(ctx, r.key, raw, r.ttl).Err()
}

// Roster counts the processes taking part in something, such as a drain: each one calls Join
// every few seconds with a name of its own, and one that has not for the roster's time to live
// no longer counts. One key (a sorted set by the time of each member's last Join), so it works
// the same on a Redis Cluster.
type Roster struct {
	rdb redis.UniversalClient
	key string
	ttl time.Duration
}

// NewRoster returns the roster name, whose members count for ttl after their last Join.
func (c *Cache) NewRoster(name string, ttl time.Duration) *Roster {
	return &Roster{rdb: c.rdb, key: c.prefix + "roster:" + name, ttl: ttl}
}

// Join counts member in (again, now) and returns how many members count.
func (r *Roster) Join(ctx context.Context, member string) (int, error) {
	now := time.Now()
	var n *redis.IntCmd
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, r.key, redis.Z{Score: float64(now.UnixMilli()), Member: member})
		p.ZRemRangeByScore(ctx, r.key, "-inf", strconv.FormatInt(now.Add(-r.ttl).UnixMilli(), 10))
		n = p.ZCard(ctx, r.key)
		p.PExpire(ctx, r.key, r.ttl)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return int(n.Val()), nil
}

// Leave counts member out at once.
func (r *Roster) Leave(ctx context.Context, member string) error {
	return r.rdb.ZRem(ctx, r.key, member).Err()
}

// Counter is a count every replica adds to, such as the pastes their drains have claimed.
type Counter struct {
	rdb redis.UniversalClient
	key string
}

// NewCounter returns the shared counter name.
func (c *Cache) NewCounter(name string) *Counter {
	return &Counter{rdb: c.rdb, key: c.prefix + "counter:" + name}
}

// Add adds n and returns the count.
func (k *Counter) Add(ctx context.Context, n int64) (int64, error) {
	return k.rdb.IncrBy(ctx, k.key, n).Result()
}

// NewLimiter returns the rate limiter name, counting in this cache's Redis under its prefix.
func (c *Cache) NewLimiter(name string) *Limiter {
	return NewLimiter(name, c.rdb, c.prefix+"rate:", c.logger)
}
