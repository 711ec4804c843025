// Package cache is the Redis side of the pastebin: the read cache of pastes, its invalidation, and
// the cleanup lock. Redis down means slower, never wrong: every failure here is a cache miss.
package cache

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Paste is a cached paste: what a read needs, and the bytes when the paste is small.
type Paste struct {
	Code        string    `json:"code"`
	ContentHash []byte    `json:"hash"`
	BlobKey     string    `json:"key"`
	Size        int64     `json:"size"`
	Title       string    `json:"title,omitempty"`
	Language    string    `json:"lang,omitempty"`
	Filename    string    `json:"file,omitempty"`
	CreatedAt   time.Time `json:"created"`
	ExpiresAt   time.Time `json:"expires"` // zero: never
	Content     []byte    `json:"-"`       // nil when the paste is too big to cache
}

// Result is what a lookup found.
type Result int

// Lookup results.
const (
	Miss Result = iota // nothing usable cached: ask the database
	Hit                // a live paste
	Gone               // deleted or past its expiry: answer 410 without asking anyone
)

// goneMarker starts the value that replaces an entry on delete; the reason follows it. A reader
// that read the database just before the delete committed fills with SET NX, which cannot
// overwrite the marker (invariant 5).
const goneMarker = 0

// goneTTL outlives any read that could have started before the delete.
const goneTTL = time.Hour

// Cache is the Redis paste cache.
type Cache struct {
	rdb     redis.UniversalClient
	prefix  string
	logger  *slog.Logger
	failing atomic.Bool
}

// New returns a cache over rdb whose keys all start with prefix.
func New(rdb redis.UniversalClient, prefix string, logger *slog.Logger) *Cache {
	return &Cache{rdb: rdb, prefix: prefix, logger: logger}
}

// Client is the Redis client, for the cleanup lock.
func (c *Cache) Client() redis.UniversalClient { return c.rdb }

// Key is the Redis key of a paste.
func (c *Cache) Key(code string) string { return c.prefix + "paste:" + code }

// Ping checks that Redis answers.
func (c *Cache) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping redis: %w", err)
	}
	return nil
}

// Get looks code up. A cached entry is never returned past its expires_at (invariant 4). For a
// deleted paste the result is Gone and the string is why, as MarkGone was told.
func (c *Cache) Get(ctx context.Context, code string, now time.Time) (Paste, Result, string) {
	raw, err := c.rdb.Get(ctx, c.Key(code)).Bytes()
	if errors.Is(err, redis.Nil) {
		c.note(ctx, nil)
		return Paste{}, Miss, ""
	}
	if c.note(ctx, err) != nil {
		return Paste{}, Miss, ""
	}
	if len(raw) > 0 && raw[0] == goneMarker {
		return Paste{}, Gone, string(raw[1:])
	}
	p, err := decode(raw)
	if err != nil {
		c.logger.WarnContext(ctx, "cache entry unreadable", "code", code, "err", err)
		return Paste{}, Miss, ""
	}
	if !p.ExpiresAt.IsZero() && !now.Before(p.ExpiresAt) {
		return Paste{}, Gone, "expired"
	}
	return p, Hit, ""
}

// Put caches p for at most ttl and never past its expiry. It never replaces what is there, so it
// cannot overwrite the marker of a delete that committed after p was read.
func (c *Cache) Put(ctx context.Context, p Paste, ttl time.Duration, now time.Time) {
	if !p.ExpiresAt.IsZero() {
		ttl = min(ttl, p.ExpiresAt.Sub(now))
	}
	if ttl < time.Millisecond {
		return
	}
	raw, err := encode(p)
	if err != nil {
		c.logger.ErrorContext(ctx, "cache entry not encodable", "code", p.Code, "err", err)
		return
	}
	c.note(ctx, c.rdb.SetNX(ctx, c.Key(p.Code), raw, ttl).Err())
}

// markGoneFor is how long MarkGone keeps trying. A failure is this client's view of Redis, not
// Redis's state: for up to a second after Redis comes back, go-redis's dial circuit breaker fails
// every command at once with the last dial error (and a command can time out under load) while
// Redis, up again, holds an entry of the paste that another replica wrote, and would serve it after
// the delete answered (invariant 5; the chaos soak found this). Waiting out the breaker's probe makes
// such a delete slower instead. Past markGoneFor, Redis is down for every replica, and comes back
// without the entry unless it persists its data (ours does not), so the delete goes on.
const markGoneFor = 3 * time.Second

// MarkGone replaces whatever is cached for code with the marker of a deleted paste, and why. It
// retries for up to markGoneFor, so a delete waits out a Redis this process cannot reach yet.
func (c *Cache) MarkGone(ctx context.Context, code, reason string) error {
	value := append([]byte{goneMarker}, reason...)
	deadline := time.Now().Add(markGoneFor)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		err := c.rdb.Set(ctx, c.Key(code), value, goneTTL).Err()
		if err == nil || time.Now().Add(wait).After(deadline) {
			return c.note(ctx, err)
		}
		select {
		case <-ctx.Done():
			return c.note(ctx, err)
		case <-time.After(wait):
		}
	}
}

// Forget drops the entries of codes in one pipeline round trip. Deleting a key that is not there
// does nothing, so cleanup calls it for every code of a batch.
func (c *Cache) Forget(ctx context.Context, codes []string) error {
	if len(codes) == 0 {
		return nil
	}
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, code := range codes {
			p.Del(ctx, c.Key(code))
		}
		return nil
	})
	return c.note(ctx, err)
}

// note logs when Redis starts or stops failing, once per change rather than once per request, and
// returns err.
func (c *Cache) note(ctx context.Context, err error) error {
	if err != nil && !c.failing.Swap(true) {
		c.logger.WarnContext(ctx, "redis unavailable, serving without cache", "err", err)
	}
	if err == nil && c.failing.Swap(false) {
		c.logger.InfoContext(ctx, "redis available again")
	}
	return err
}

// An entry is a version byte, the length of the JSON header, the header, then the content.
const entryVersion = 1

func encode(p Paste) ([]byte, error) {
	meta, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 0, 5+len(meta)+len(p.Content))
	buf = append(buf, entryVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(meta)))
	buf = append(buf, meta...)
	return append(buf, p.Content...), nil
}

func decode(raw []byte) (Paste, error) {
	if len(raw) < 5 || raw[0] != entryVersion {
		return Paste{}, errors.New("unknown entry format")
	}
	n := binary.BigEndian.Uint32(raw[1:5])
	if uint64(len(raw)-5) < uint64(n) {
		return Paste{}, errors.New("truncated entry")
	}
	var p Paste
	if err := json.Unmarshal(raw[5:5+n], &p); err != nil {
		return Paste{}, err
	}
	if rest := raw[5+n:]; len(rest) > 0 {
		p.Content = rest
	}
	return p, nil
}
