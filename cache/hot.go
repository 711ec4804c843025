package cache

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// MaxHot bounds the contents the ranking of HotContent keeps: past it the coldest go, so that a
// flood of distinct contents cannot grow it. A content that grows hot again is back in at its
// next create.
const MaxHot = 1000

// hotSecretTTL is how long a client key lasts before another is drawn (docs/design.md, "Spam
// signal"): a client that creates across the change counts twice for one window, once a day.
const hotSecretTTL = 24 * time.Hour

// HotContent counts the distinct clients that created each content in the last window, across
// every replica that shares the Redis (docs/design.md, "Spam signal"). A client is kept only as an
// HMAC of its address under a random key that lives in Redis, the same for every replica and never
// sent anywhere else; each client's mark goes when the window has passed since its last create.
//
// Every key of it shares one hash tag, {hot}, so the scripts that touch a content's set and the
// ranking together run in one slot of a Redis Cluster: one node holds the signal, which counts
// creates alone, far fewer than reads.
type HotContent struct {
	rdb    redis.UniversalClient
	keys   string // prefix of its keys, hash tag included
	window time.Duration
	logger *slog.Logger
	outage Outage
	skip   atomic.Int64 // Unix nanoseconds before which Add does not ask Redis, which just failed

	mu          sync.Mutex
	secret      []byte
	secretUntil time.Time
}

// Hot is a content and how many distinct clients created it in the window.
type Hot struct {
	Hash    []byte
	Clients int
}

// NewHotContent returns the distinct creators of each content over a sliding window.
func (c *Cache) NewHotContent(window time.Duration) *HotContent {
	return &HotContent{rdb: c.rdb, keys: c.prefix + "hot:{hot}:", window: window, logger: c.logger}
}

// Window is the window clients are counted over.
func (h *HotContent) Window() time.Duration { return h.window }

func (h *HotContent) contentKey(hexHash string) string { return h.keys + "c:" + hexHash }

// Add counts client as a creator of the content hash now and returns how many distinct clients
// created it in the window. One script, one round trip, once the client key is known. While
// Redis fails it answers the error at once for redisRecheck rather than wait on Redis each time;
// a ctx that runs out counts as a failure too: the caller bounds the wait, and a Redis that slow
// should not be waited on by the next caller either.
func (h *HotContent) Add(ctx context.Context, hash []byte, client string) (int, error) {
	if time.Now().UnixNano() < h.skip.Load() {
		return 0, errors.New("redis unavailable: spam signal paused")
	}
	n, err := h.add(ctx, hash, client)
	if err != nil {
		h.skip.Store(time.Now().Add(redisRecheck).UnixNano())
		if h.outage.Failed() {
			h.logger.Warn("redis unavailable: creates not counted for the spam signal", "err", err)
		}
		return 0, err
	}
	if err == nil && h.outage.Succeeded() {
		h.logger.Info("spam signal counted in redis again")
	}
	return n, err
}

func (h *HotContent) add(ctx context.Context, hash []byte, client string) (int, error) {
	secret, err := h.clientKey(ctx)
	if err != nil {
		return 0, err
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(client))
	member := mac.Sum(nil)[:16] // 128 bits: no two clients of a window collide
	hexHash := hex.EncodeToString(hash)
	n, err := addScript.Run(ctx, h.rdb, []string{h.contentKey(hexHash), h.keys + "top"},
		member, h.window.Milliseconds(), hexHash, MaxHot).Int()
	return n, err
}

// addScript marks ARGV[1] (the client's HMAC) as a creator of the content of KEYS[1] now, by
// Redis's clock, so that the replicas' clocks need not agree; forgets the marks older than the
// window (ARGV[2] ms); and writes the count in the ranking KEYS[2] under the content (ARGV[3]),
// which keeps the ARGV[4] hottest. Both keys live as long as a window after their last create.
var addScript = redis.NewScript(`
local t = redis.call("TIME")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local window = tonumber(ARGV[2])
redis.call("ZADD", KEYS[1], now, ARGV[1])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now - window)
redis.call("PEXPIRE", KEYS[1], window)
local n = redis.call("ZCARD", KEYS[1])
redis.call("ZADD", KEYS[2], n, ARGV[3])
redis.call("PEXPIRE", KEYS[2], window)
local extra = redis.call("ZCARD", KEYS[2]) - tonumber(ARGV[4])
if extra > 0 then
  redis.call("ZREMRANGEBYRANK", KEYS[2], 0, extra - 1)
end
return n
`)

// clientKey is the key clients are hashed with: drawn by the first replica that needs one (SET
// NX), read by the others, and held in memory until Redis lets it expire, so that the replicas
// change keys together (within their clocks' disagreement).
func (h *HotContent) clientKey(ctx context.Context) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.secret != nil && time.Now().Before(h.secretUntil) {
		return h.secret, nil
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	res, err := secretScript.Run(ctx, h.rdb, []string{h.keys + "key"}, fresh, int(hotSecretTTL.Seconds())).Slice()
	if err != nil {
		return nil, err
	}
	secret, _ := res[0].(string)
	ttl, _ := res[1].(int64)
	if len(secret) != 32 || ttl <= 0 {
		return nil, fmt.Errorf("spam signal key unreadable (%d bytes, ttl %d ms)", len(secret), ttl)
	}
	h.secret = []byte(secret)
	h.secretUntil = time.Now().Add(time.Duration(ttl)*time.Millisecond - time.Second)
	return h.secret, nil
}

// secretScript sets KEYS[1] to ARGV[1] for ARGV[2] seconds unless it is set, and answers its
// value and its remaining time in milliseconds.
var secretScript = redis.NewScript(`
redis.call("SET", KEYS[1], ARGV[1], "NX", "EX", ARGV[2])
return {redis.call("GET", KEYS[1]), redis.call("PTTL", KEYS[1])}
`)

// recountChunk is how many contents one recount takes: a script holds Redis, every replica's, for
// as long as it runs, and one over the whole ranking (MaxHot contents) held it 10 to 18 ms, at each
// scrape of each replica's metrics (make bench-heavyday, which scrapes every second, in Redis's
// slow log), stalling the users' requests behind it.
const recountChunk = 100

// Top returns the n contents created by the most distinct clients in the window, the most first.
// Counts in the ranking are as of each content's last create, so a count now is at most the
// ranking's (marks only age out between creates): Top counts the contents again in the ranking's
// order, recountChunk at a time, and stops once its n most are at least the next one's count in
// the ranking, which none after it can beat; among contents as hot as the last it keeps, the ones
// counted first. It drops from the ranking those whose window has passed.
func (h *HotContent) Top(ctx context.Context, n int) ([]Hot, error) {
	if n <= 0 {
		return nil, nil
	}
	ranked, err := h.rdb.ZRevRangeWithScores(ctx, h.keys+"top", 0, MaxHot-1).Result()
	if err != nil {
		return nil, err
	}
	var members []string
	var counts []int64
	var top []Hot
	for start := 0; start < len(ranked); start += recountChunk {
		if len(top) >= n && float64(top[n-1].Clients) >= ranked[start].Score {
			break
		}
		chunk := ranked[start:min(start+recountChunk, len(ranked))]
		c, err := h.recount(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, z := range chunk {
			members = append(members, z.Member.(string))
		}
		counts = append(counts, c...)
		top = topOf(members, counts, n)
	}
	return top, nil
}

// recount counts the contents of chunk again, in one script.
func (h *HotContent) recount(ctx context.Context, chunk []redis.Z) ([]int64, error) {
	keys := make([]string, 0, len(chunk)+1)
	keys = append(keys, h.keys+"top")
	args := make([]any, 0, len(chunk)+1)
	args = append(args, h.window.Milliseconds())
	for _, z := range chunk {
		m := z.Member.(string)
		keys = append(keys, h.contentKey(m))
		args = append(args, m)
	}
	return recountScript.Run(ctx, h.rdb, keys, args...).Int64Slice()
}

// recountScript forgets the marks of the contents KEYS[2..] that are older than the window
// (ARGV[1] ms), writes their counts in the ranking KEYS[1] under their names (ARGV[2..]), drops
// those left with none, and answers the counts.
var recountScript = redis.NewScript(`
local t = redis.call("TIME")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local counts = {}
for i = 2, #KEYS do
  redis.call("ZREMRANGEBYSCORE", KEYS[i], "-inf", now - tonumber(ARGV[1]))
  local n = redis.call("ZCARD", KEYS[i])
  if n == 0 then
    redis.call("ZREM", KEYS[1], ARGV[i])
  else
    redis.call("ZADD", KEYS[1], n, ARGV[i])
  end
  counts[#counts + 1] = n
end
return counts
`)

// topOf sorts the contents that still count, the most clients first (then by hash, for a stable
// order), and keeps n.
func topOf(members []string, counts []int64, n int) []Hot {
	var top []Hot
	for i, m := range members {
		hash, err := hex.DecodeString(m)
		if err != nil || counts[i] == 0 {
			continue
		}
		top = append(top, Hot{Hash: hash, Clients: int(counts[i])})
	}
	slices.SortFunc(top, func(a, b Hot) int {
		if a.Clients != b.Clients {
			return b.Clients - a.Clients
		}
		return slices.Compare(a.Hash, b.Hash)
	})
	return top[:min(n, len(top))]
}
