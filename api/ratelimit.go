package api

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"pastebin/cache"
)

// localClients bounds the clients a process counts in memory (while Redis is down, or without
// Redis): the least recently seen are forgotten first, which only ever gives one a fresh allowance.
// At about 200 bytes a client, the bound keeps the counts under 20MB whoever sends requests.
const localClients = 100_000

// redisRecheck is how long a limiter counts in memory after Redis failed before it asks Redis again,
// so that while Redis is down a request does not wait on it first.
const redisRecheck = time.Second

// rateLimiter counts a rate per client with GCRA (the generic cell rate algorithm): a client may
// spend its whole allowance at once, then earns one request back every Window/Requests. With Redis
// the counts live there, so the replicas add up to one limit (peers.md 5.10: in-memory limiters
// multiply by the replica count): redis_rate keeps one key per client, read and written by one Lua
// script on that key alone, so it works the same on one server and on a Redis Cluster, and
// concurrent requests go to Redis concurrently. When Redis fails, the process counts in its own
// memory with golang.org/x/time/rate, the same algorithm, until Redis answers again (DESIGN: Redis
// down means slower, not broken); while that lasts each replica allows the whole limit.
type rateLimiter struct {
	name       string
	rate       Rate
	redis      *redis_rate.Limiter // nil: counted in this process alone
	rdb        redis.UniversalClient
	keyPrefix  string
	local      *lru.Cache[string, *rate.Limiter]
	localUntil atomic.Int64 // Unix nanoseconds before which Redis is not asked
	outage     cache.Outage // Redis failing for this limit, logged once per outage
	logger     *slog.Logger
}

func newRateLimiter(name string, r Rate, cfg Config, deps Deps, logger *slog.Logger) *rateLimiter {
	local, err := lru.New[string, *rate.Limiter](localClients)
	if err != nil {
		panic(err) // only for a size below 1
	}
	l := &rateLimiter{name: name, rate: r, local: local, keyPrefix: cfg.RateKeyPrefix + name + ":", logger: logger}
	if deps.RateRedis != nil {
		l.redis, l.rdb = redis_rate.NewLimiter(rateKeys{deps.RateRedis}), deps.RateRedis
	}
	return l
}

// verdict is what a limiter says of a client.
type verdict struct {
	allowed    bool
	remaining  int           // requests the client may still send at once
	retryAfter time.Duration // when not allowed: how long until the next request is
	resetAfter time.Duration // how long until the client's whole allowance is back
}

// allow counts one request of the client key and says whether it may go on.
func (l *rateLimiter) allow(ctx context.Context, key string) verdict { return l.count(ctx, key, 1) }

// check says whether the client key could send one more request now, without counting one.
func (l *rateLimiter) check(ctx context.Context, key string) verdict {
	v := l.count(ctx, key, 0)
	v.allowed = v.remaining >= 1
	if !v.allowed {
		// The allowance comes back one request at a time: the last one first.
		v.retryAfter = v.resetAfter - time.Duration(l.rate.Requests-1)*l.interval()
	}
	return v
}

func (l *rateLimiter) interval() time.Duration { return l.rate.Window / time.Duration(l.rate.Requests) }

// count takes n requests (0: none, to look) from the client's allowance in Redis, or in memory while
// Redis fails.
func (l *rateLimiter) count(ctx context.Context, key string, n int) verdict {
	if l.redis == nil || time.Now().UnixNano() < l.localUntil.Load() {
		return l.countLocally(key, n)
	}
	limit := redis_rate.Limit{Rate: l.rate.Requests, Burst: l.rate.Requests, Period: l.rate.Window}
	// Not cut short by a client that goes away: that would read as Redis failing.
	res, err := l.redis.AllowN(context.WithoutCancel(ctx), l.keyPrefix+key, limit, n)
	if err != nil {
		l.localUntil.Store(time.Now().Add(redisRecheck).UnixNano())
		if l.outage.Failed() {
			// Logged without a request's context: the switch is the process's, not a request's.
			l.logger.Warn("redis unavailable: rate limit counted in this process only", "limit", l.name, "err", err)
		}
		return l.countLocally(key, n)
	}
	if l.outage.Succeeded() {
		l.logger.Info("rate limit counted in redis again", "limit", l.name)
	}
	return verdict{allowed: res.Allowed > 0, remaining: res.Remaining, retryAfter: res.RetryAfter, resetAfter: res.ResetAfter}
}

func (l *rateLimiter) countLocally(key string, n int) verdict {
	lim, ok := l.local.Get(key)
	if !ok {
		fresh := rate.NewLimiter(rate.Every(l.interval()), l.rate.Requests)
		if lim, ok, _ = l.local.PeekOrAdd(key, fresh); !ok {
			lim = fresh
		}
	}
	now := time.Now()
	allowed := lim.AllowN(now, n)
	tokens := lim.TokensAt(now)
	v := verdict{allowed: allowed && n > 0, remaining: max(0, int(tokens)), resetAfter: l.tokensTime(float64(l.rate.Requests) - tokens)}
	if !allowed {
		v.retryAfter = l.tokensTime(float64(n) - tokens)
	}
	return v
}

// refund gives the client key back one request that allow took: an attempt that was counted
// before it could be judged, and turned out not to count. It goes where allow counted (Redis, or
// this process while Redis fails); a refund that fails leaves the request counted, which only errs
// on the side of the limit.
func (l *rateLimiter) refund(ctx context.Context, key string) {
	if l.redis == nil || time.Now().UnixNano() < l.localUntil.Load() {
		l.refundLocally(key)
		return
	}
	err := refundScript.Run(context.WithoutCancel(ctx), l.rdb, []string{l.keyPrefix + key},
		l.rate.Window.Seconds(), l.rate.Requests).Err()
	if err != nil {
		l.logger.WarnContext(ctx, "rate limit refund failed", "limit", l.name, "err", err)
	}
}

func (l *rateLimiter) refundLocally(key string) {
	if lim, ok := l.local.Get(key); ok {
		lim.AllowN(time.Now(), -1) // capped at the burst again by the next count
	}
}

// refundScript moves a client's GCRA time (redis_rate's value: seconds since 2017, by Redis's
// clock) back by one request's interval. redis_rate's own AllowN cannot: with a negative cost it
// writes only a time still in the future, so giving back the one request of a full allowance would
// be lost. A time that falls to now or before means the allowance is whole: the key goes.
var refundScript = redis.NewScript(`
local tat = redis.call("GET", KEYS[1])
if not tat then return 0 end
local now = redis.call("TIME")
now = (now[1] - 1483228800) + (now[2] / 1000000)
local new_tat = tonumber(tat) - tonumber(ARGV[1]) / tonumber(ARGV[2])
if new_tat <= now then
  redis.call("DEL", KEYS[1])
else
  redis.call("SET", KEYS[1], new_tat, "EX", math.ceil(new_tat - now))
end
return 1
`)

// tokensTime is how long the allowance takes to earn back n requests.
func (l *rateLimiter) tokensTime(n float64) time.Duration {
	return time.Duration(max(0, n) * float64(l.interval()))
}

// setHeaders tells the client its allowance: X-RateLimit-Limit (requests per window),
// -Remaining (requests it may send at once), -Reset (Unix seconds when all of it is back).
func (v verdict) setHeaders(h http.Header, r Rate) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(r.Requests))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(v.remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(v.resetAfter+time.Second-1).Unix(), 10))
}

// rateKeys gives redis_rate the keys asked for: it names each "rate:" + key, which would put the
// rate limits outside PASTEBIN_REDIS_PREFIX (and outside an ACL that allows only that prefix).
type rateKeys struct{ redis.UniversalClient }

func unprefixed(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k[len("rate:"):]
	}
	return out
}

func (r rateKeys) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return r.UniversalClient.Eval(ctx, script, unprefixed(keys), args...)
}

func (r rateKeys) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return r.UniversalClient.EvalSha(ctx, sha1, unprefixed(keys), args...)
}

func (r rateKeys) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return r.UniversalClient.EvalRO(ctx, script, unprefixed(keys), args...)
}

func (r rateKeys) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return r.UniversalClient.EvalShaRO(ctx, sha1, unprefixed(keys), args...)
}

func (r rateKeys) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return r.UniversalClient.Del(ctx, unprefixed(keys)...)
}
