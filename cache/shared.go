package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Roster counts the processes taking part in something, such as a drain, and how large a part
// each takes (its weight: a drain's workers): each one calls Join every few seconds with a name of
// its own, and one that has not for the roster's time to live no longer counts. Two keys (a sorted
// set by the time of each member's last Join, and a hash of their weights) in one hash slot, so it
// works the same on a Redis Cluster.
type Roster struct {
	rdb     redis.UniversalClient
	key     string // the members, by the time of their last Join
	weights string // the members' weights
	ttl     time.Duration
}

// NewRoster returns the roster name, whose members count for ttl after their last Join.
func (c *Cache) NewRoster(name string, ttl time.Duration) *Roster {
	key := c.prefix + "roster:{" + name + "}"
	return &Roster{rdb: c.rdb, key: key, weights: key + ":weights", ttl: ttl}
}

// Headcount is who a roster counts: its members, and the sum of their weights.
type Headcount struct {
	Members int
	Weight  int
}

// Join counts member in (again, now) with its weight, and returns whom the roster counts.
func (r *Roster) Join(ctx context.Context, member string, weight int) (Headcount, error) {
	now := time.Now()
	res, err := joinScript.Run(ctx, r.rdb, []string{r.key, r.weights}, now.UnixMilli(),
		now.Add(-r.ttl).UnixMilli(), r.ttl.Milliseconds(), member, weight).Int64Slice()
	if err != nil {
		return Headcount{}, err
	}
	if len(res) != 2 {
		return Headcount{}, fmt.Errorf("roster: unexpected reply %v", res)
	}
	return Headcount{Members: int(res[0]), Weight: int(res[1])}, nil
}

// joinScript counts a member in, counts out those silent since the cut-off, and answers the
// members and their weights' sum. A member whose weight is lost counts one, and a weight whose
// member is lost goes (either key may be evicted alone). KEYS: the members by time, their
// weights; ARGV: now, the cut-off (milliseconds), the time to live (milliseconds), the member, its
// weight.
var joinScript = redis.NewScript(`
redis.call("ZADD", KEYS[1], ARGV[1], ARGV[4])
redis.call("HSET", KEYS[2], ARGV[4], ARGV[5])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[2])
for _, m in ipairs(redis.call("HKEYS", KEYS[2])) do
  if not redis.call("ZSCORE", KEYS[1], m) then
    redis.call("HDEL", KEYS[2], m)
  end
end
local members = redis.call("ZRANGE", KEYS[1], 0, -1)
local weight = 0
if #members > 0 then
  for _, w in ipairs(redis.call("HMGET", KEYS[2], unpack(members))) do
    weight = weight + (tonumber(w) or 1)
  end
end
redis.call("PEXPIRE", KEYS[1], ARGV[3])
redis.call("PEXPIRE", KEYS[2], ARGV[3])
return {#members, weight}
`)

// Leave counts member out at once.
func (r *Roster) Leave(ctx context.Context, member string) error {
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, r.key, member)
		p.HDel(ctx, r.weights, member)
		return nil
	})
	return err
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
