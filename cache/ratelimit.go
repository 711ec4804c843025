package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// localKeys bounds the keys a limiter counts in memory (while Redis is down, or without Redis): the
// least recently used are forgotten first, which only ever gives one a fresh allowance. At about
// 200 bytes a key, the bound keeps the counts under 20MB whoever sends requests.
const localKeys = 100_000

// redisRecheck is how long a limiter counts in memory after Redis failed before it asks Redis
// again, so that while Redis is down a caller does not wait on it first.
const redisRecheck = time.Second

// Limit is a rate as GCRA (the generic cell rate algorithm) counts it: Tokens earned back every
// Per, at most Burst held at once (0: Tokens). A key may spend its whole burst at once, then
// earns one token back every Per/Tokens.
type Limit struct {
	Tokens int
	Per    time.Duration
	Burst  int
}

// On reports whether l limits anything.
func (l Limit) On() bool { return l.Tokens > 0 && l.Per > 0 }

func (l Limit) burst() int {
	if l.Burst > 0 {
		return l.Burst
	}
	return l.Tokens
}

// interval is how long one token takes to come back.
func (l Limit) interval() time.Duration { return l.Per / time.Duration(l.Tokens) }

// tokensTime is how long l takes to earn back n tokens.
func (l Limit) tokensTime(n float64) time.Duration {
	return time.Duration(max(0, n) * float64(l.interval()))
}

// Verdict is what a limiter says of a key.
type Verdict struct {
	Allowed    bool
	Remaining  int           // tokens the key may still take at once
	RetryAfter time.Duration // when not allowed: how long until the tokens asked for are there
	ResetAfter time.Duration // how long until the key's whole burst is back
	// Local says the tokens were counted in this process's memory, Redis being away: every
	// process then allows the whole limit by itself.
	Local bool
}

// Limiter counts rates per key with GCRA. With Redis the counts live there, so every process that
// shares the Redis adds up to one limit (an in-memory limiter multiplies it by the number of
// replicas): redis_rate keeps one key per limited key, read and written by one Lua script on that
// key alone, so it works the same on one server and on a Redis Cluster, and concurrent callers go
// to Redis concurrently. When Redis fails, the process counts in its own memory with
// golang.org/x/time/rate, the same algorithm, until Redis answers again: Redis down means slower
// or looser, never broken.
type Limiter struct {
	name       string
	redis      *redis_rate.Limiter // nil: counted in this process alone
	rdb        redis.UniversalClient
	keyPrefix  string
	local      *lru.Cache[string, *rate.Limiter]
	localUntil atomic.Int64 // Unix nanoseconds before which Redis is not asked
	outage     Outage       // Redis failing for this limiter, logged once per outage
	logger     *slog.Logger
}

// NewLimiter returns the limiter called name (in the logs, and in its Redis keys: keyPrefix + name
// + ":" + key), counting in rdb, or in this process alone when rdb is nil.
func NewLimiter(name string, rdb redis.UniversalClient, keyPrefix string, logger *slog.Logger) *Limiter {
	local, err := lru.New[string, *rate.Limiter](localKeys)
	if err != nil {
		panic(err) // only for a size below 1
	}
	l := &Limiter{name: name, local: local, keyPrefix: keyPrefix + name + ":", logger: logger}
	if rdb != nil {
		l.redis, l.rdb = redis_rate.NewLimiter(rateKeys{rdb}), rdb
	}
	return l
}

// Allow takes n tokens of key's allowance under limit, if they are there, and says so. With n 0 it
// takes nothing and only looks (see Peek).
func (l *Limiter) Allow(ctx context.Context, key string, limit Limit, n int) Verdict {
	if !l.inRedis() {
		return l.allowLocally(key, limit, n)
	}
	rl := redis_rate.Limit{Rate: limit.Tokens, Burst: limit.burst(), Period: limit.Per}
	// Not cut short by a caller that goes away: that would read as Redis failing.
	res, err := l.redis.AllowN(context.WithoutCancel(ctx), l.keyPrefix+key, rl, n)
	if !l.redisAnswered(err, "rate limit counted in this process only") {
		return l.allowLocally(key, limit, n)
	}
	return Verdict{Allowed: res.Allowed > 0, Remaining: res.Remaining, RetryAfter: res.RetryAfter, ResetAfter: res.ResetAfter}
}

// inRedis says whether counts go to Redis now: there is one, and it has not failed within
// redisRecheck.
func (l *Limiter) inRedis() bool {
	return l.redis != nil && time.Now().UnixNano() >= l.localUntil.Load()
}

// redisAnswered takes the outcome of a count in Redis: on an error the limiter does without Redis
// for redisRecheck (instead, what it says), and the outage is logged once.
func (l *Limiter) redisAnswered(err error, instead string) bool {
	if err != nil {
		l.localUntil.Store(time.Now().Add(redisRecheck).UnixNano())
		if l.outage.Failed() {
			// Logged without a caller's context: the switch is the process's, not a request's.
			l.logger.Warn("redis unavailable: "+instead, "limit", l.name, "err", err)
		}
		return false
	}
	if l.outage.Succeeded() {
		l.logger.Info("rate limit counted in redis again", "limit", l.name)
	}
	return true
}

// Peek says whether n tokens of key's allowance are there now, and if not when they will be,
// without taking any.
func (l *Limiter) Peek(ctx context.Context, key string, limit Limit, n int) Verdict {
	v := l.Allow(ctx, key, limit, 0)
	v.Allowed = v.Remaining >= n
	v.RetryAfter = 0
	if !v.Allowed {
		// The allowance comes back one token at a time: the last ones of the burst first.
		v.RetryAfter = max(0, v.ResetAfter-time.Duration(limit.burst()-n)*limit.interval())
	}
	return v
}

func (l *Limiter) allowLocally(key string, limit Limit, n int) Verdict {
	lim, burst := l.localLimiter(key, limit), limit.burst()
	now := time.Now()
	allowed := lim.AllowN(now, n)
	tokens := lim.TokensAt(now)
	v := Verdict{Allowed: allowed && n > 0, Remaining: max(0, int(tokens)), Local: true,
		ResetAfter: limit.tokensTime(float64(burst) - tokens)}
	if !allowed {
		v.RetryAfter = limit.tokensTime(float64(n) - tokens)
	}
	return v
}

// localLimiter is key's limiter in this process's memory, at limit.
func (l *Limiter) localLimiter(key string, limit Limit) *rate.Limiter {
	every, burst := rate.Every(limit.interval()), limit.burst()
	lim, ok := l.local.Get(key)
	if !ok {
		fresh := rate.NewLimiter(every, burst)
		if lim, ok, _ = l.local.PeekOrAdd(key, fresh); !ok {
			lim = fresh
		}
	}
	if lim.Limit() != every || lim.Burst() != burst { // the caller changed its limit
		now := time.Now()
		lim.SetLimitAt(now, every)
		lim.SetBurstAt(now, burst)
	}
	return lim
}

// Reservation is what Reserve says.
type Reservation struct {
	// Taken: the tokens are the caller's once Wait has passed. Not taken, nothing was counted, and
	// Wait is how long until the queue is short enough to ask again.
	Taken bool
	Wait  time.Duration
}

// ErrNotShared is Reserve's answer while Redis is away (or the limiter has none): a queue the
// processes share cannot be kept in one process's memory, where each would serve the whole limit
// by itself. The caller chooses what to do instead (the drain paces itself at its share).
var ErrNotShared = errors.New("redis unavailable: nothing reserved")

// Reserve takes n tokens of key's allowance under limit in the order callers ask, whether or not
// they are there yet, and says when they are the caller's: callers are served first come, first
// served. Allow serves instead whoever asks first once the tokens are there, which a process the
// machine starves of processor time loses again and again. Where the tokens would come later than
// most from now, Reserve takes none: the queue stays short. The queue is kept in tokens: where a
// caller's limit differs from the one the queue was reserved at, what it still owes is paid at the
// new rate, so a raised rate serves the queue sooner (as GCRA's time alone, it would hold the
// callers to the old rate's spacing for as long as the queue was). A key is reserved from, or
// allowed from (Allow, Refund), never both: the two keep it in different forms. Unlike Allow, it
// counts nothing in memory when Redis fails: it answers ErrNotShared (wrapping Redis's error).
func (l *Limiter) Reserve(ctx context.Context, key string, limit Limit, n int, most time.Duration) (Reservation, error) {
	if !l.inRedis() {
		return Reservation{}, ErrNotShared
	}
	res, err := reserveScript.Run(context.WithoutCancel(ctx), l.rdb, []string{l.keyPrefix + key},
		limit.burst(), limit.interval().Seconds(), n, most.Seconds()).Slice()
	if !l.redisAnswered(err, "nothing reserved") {
		return Reservation{}, fmt.Errorf("%w: %w", ErrNotShared, err)
	}
	return reservationOf(res)
}

// reservationOf reads reserveScript's reply.
func reservationOf(res []any) (Reservation, error) {
	if len(res) == 2 {
		taken, ok := res[0].(int64)
		seconds, _ := res[1].(string)
		wait, err := strconv.ParseFloat(seconds, 64)
		if ok && err == nil {
			return Reservation{Taken: taken == 1, Wait: time.Duration(wait * float64(time.Second))}, nil
		}
	}
	return Reservation{}, fmt.Errorf("reservation: unexpected reply %v", res)
}

// reserveScript is GCRA as redis_rate counts it (the time, in seconds since 2017 by Redis's clock,
// at which the whole burst is back: "tat"), with that time always moved on by the tokens taken, so
// that callers queue; the key is a hash that keeps beside it the seconds a token took when it was
// last moved ("interval"), by which what is still owed is counted again at a changed rate. KEYS[1]
// the key; ARGV burst, seconds a token takes, tokens, and the most seconds a caller may wait. It
// answers {1, wait} with the tokens taken, or {0, how long until the wait would be short enough}
// with none; the seconds as strings, which Redis would otherwise cut to whole numbers.
var reserveScript = redis.NewScript(`
local now = redis.call("TIME")
now = (now[1] - 1483228800) + (now[2] / 1000000)
local interval = tonumber(ARGV[2])
local tat = now
local last = redis.call("HMGET", KEYS[1], "tat", "interval")
if last[1] and last[2] then
  local owed = tonumber(last[1]) - now
  if owed > 0 then
    tat = now + owed * interval / tonumber(last[2])
  end
end
local new_tat = tat + interval * tonumber(ARGV[3])
local wait = new_tat - interval * tonumber(ARGV[1]) - now
local most = tonumber(ARGV[4])
if wait > most then
  return {0, tostring(wait - most)}
end
redis.call("HSET", KEYS[1], "tat", new_tat, "interval", interval)
redis.call("EXPIRE", KEYS[1], math.max(1, math.ceil(new_tat - now)))
return {1, tostring(math.max(wait, 0))}
`)

// Refund gives key back n tokens that Allow took: attempts that were counted before they could be
// judged, and turned out not to count, or work that was paid for and not done. They go where
// Allow counted (Redis, or this process while Redis fails); a refund that fails leaves them
// counted, which only errs on the side of the limit.
func (l *Limiter) Refund(ctx context.Context, key string, limit Limit, n int) {
	if !l.inRedis() {
		if lim, ok := l.local.Get(key); ok {
			lim.AllowN(time.Now(), -n) // capped at the burst again by the next count
		}
		return
	}
	err := refundScript.Run(context.WithoutCancel(ctx), l.rdb, []string{l.keyPrefix + key},
		limit.interval().Seconds()*float64(n)).Err()
	if err != nil {
		l.logger.WarnContext(ctx, "rate limit refund failed", "limit", l.name, "err", err)
	}
}

// refundScript moves a key's GCRA time (redis_rate's value: seconds since 2017, by Redis's clock)
// back by ARGV[1] seconds. redis_rate's own AllowN cannot: with a negative cost it writes only a
// time still in the future, so giving back the last token of a full allowance would be lost. A
// time that falls to now or before means the allowance is whole: the key goes.
var refundScript = redis.NewScript(`
local tat = redis.call("GET", KEYS[1])
if not tat then return 0 end
local now = redis.call("TIME")
now = (now[1] - 1483228800) + (now[2] / 1000000)
local new_tat = tonumber(tat) - tonumber(ARGV[1])
if new_tat <= now then
  redis.call("DEL", KEYS[1])
else
  redis.call("SET", KEYS[1], new_tat, "EX", math.ceil(new_tat - now))
end
return 1
`)

// rateKeys gives redis_rate the keys asked for: it names each "rate:" + key, which would put the
// rate limits outside the process's key prefix (and outside an ACL that allows only that prefix).
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
