package api

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"pastebin/cache"
)

// clientRate is one of the API's per-client rate limits: its rate, counted by a cache.Limiter
// (in Redis, so that the replicas add up to one limit; in memory while Redis is down).
type clientRate struct {
	rate    Rate
	limiter *cache.Limiter
}

func newClientRate(name string, r Rate, cfg Config, deps Deps, logger *slog.Logger) *clientRate {
	return &clientRate{rate: r, limiter: cache.NewLimiter(name, deps.RateRedis, cfg.RateKeyPrefix, logger)}
}

func (c *clientRate) limit() cache.Limit {
	return cache.Limit{Tokens: c.rate.Requests, Per: c.rate.Window}
}

// allow counts one request of the client key and says whether it may go on.
func (c *clientRate) allow(ctx context.Context, key string) cache.Verdict {
	return c.limiter.Allow(ctx, key, c.limit(), 1)
}

// check says whether the client key could send one more request now, without counting one.
func (c *clientRate) check(ctx context.Context, key string) cache.Verdict {
	return c.limiter.Peek(ctx, key, c.limit(), 1)
}

// refund gives the client key back the one request that allow took.
func (c *clientRate) refund(ctx context.Context, key string) {
	c.limiter.Refund(ctx, key, c.limit(), 1)
}

// setRateHeaders tells the client its allowance: X-RateLimit-Limit (requests per window),
// -Remaining (requests it may send at once), -Reset (Unix seconds when all of it is back).
func setRateHeaders(h http.Header, v cache.Verdict, r Rate) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(r.Requests))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(v.Remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(v.ResetAfter+time.Second-1).Unix(), 10))
}
