// Package cache is the Redis side of the pastebin: the read cache of pastes, its invalidation, the
// cleanup lock, and the rate limits that every replica counts together (Limiter). Redis down means
// slower, never wrong: a failed read is a cache miss, and a delete marker that could not be written
// is reported, so that the delete is not confirmed.
package cache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// Paste is a cached paste: what a read needs, and the bytes when the paste is small.
type Paste struct {
	Code        string
	ContentHash []byte
	BlobKey     string
	Size        int64 // of the original bytes
	// Encoding is how Content (and the blob) is stored: "" the original bytes, "zstd" a frame of
	// StoredSize bytes. The cache holds a paste as S3 does, compressed.
	Encoding   string
	StoredSize int64
	Title      string
	Language   string
	Filename   string
	// Encryption is an end-to-end encrypted paste's format: its content is ciphertext.
	Encryption string
	CreatedAt  time.Time
	ExpiresAt  time.Time // zero: never
	Content    []byte    // nil when the paste is too big to cache
	// Server is the run_id of the Redis incarnation the entry was written to, as the writer knew it
	// before it read the database. An entry from another incarnation is not trusted.
	Server string
}

// Result is what a lookup found.
type Result int

// Lookup results.
const (
	Miss Result = iota // nothing usable cached: ask the database
	Hit                // a live paste
	Gone               // deleted or past its expiry: answer 410 without asking anyone
)

// Lookup is the answer of Get.
type Lookup struct {
	Result Result
	Paste  Paste  // when Hit
	Reason string // when Gone: why, as MarkGone was told, or "expired"
	// server is the incarnation of the Redis server that holds the key, as seen by this lookup,
	// before the caller reads the database: Put stamps the entry it fills with it.
	server string
}

// goneMarker starts the value that replaces an entry on delete; the reason follows it. A reader
// that read the database just before the delete committed fills only where no marker is (putSQL),
// so it cannot overwrite the marker (invariant 5).
const goneMarker = 0

// goneTTL outlives any read that could have started before the delete.
const goneTTL = time.Hour

// SkewMargin is how far the clocks of this process and of PostgreSQL may disagree without a cached
// entry being judged differently than the database would judge it: within SkewMargin of its expiry,
// either side, an entry is a miss and the database decides with its own clock (invariant 4).
const SkewMargin = 10 * time.Second

// Cache is the Redis paste cache.
type Cache struct {
	rdb      redis.UniversalClient
	prefix   string
	logger   *slog.Logger
	outage   Outage
	serverOf func(ctx context.Context, key string) string // run_id of the server holding key; "" unknown
}

// Client is the Redis client, for the cleanup lock and the rate limits.
func (c *Cache) Client() redis.UniversalClient { return c.rdb }

// Close closes the Redis client.
func (c *Cache) Close() error { return c.rdb.Close() }

// Key is the Redis key of a paste.
func (c *Cache) Key(code string) string { return c.prefix + "paste:" + code }

// gzipKey holds the gzip form of code's paste: its transcoder's version, a space, the form. It is
// read only beside the paste's entry, and trusted only when the entry is a Hit, whose checks (the
// marker of a delete, the expiry, the server) then hold for it too; a code names one paste for
// far longer than the key lives (Put gives it the entry's time to live).
func (c *Cache) gzipKey(code string) string { return c.Key(code) + ":gzip" }

// Reachable reports whether Redis answered the last commands this process sent (no outage now).
func (c *Cache) Reachable() bool { return !c.outage.failing.Load() }

// Ping checks that Redis answers: every master, for a cluster, since a master that is down fails
// the keys of its slots.
func (c *Cache) Ping(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := ForEachMaster(pctx, c.rdb, func(ctx context.Context, node *redis.Client) error {
		if err := node.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("%s: %w", node.Options().Addr, err)
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("ping redis: %w", err)
	}
	return c.note(ctx, err) // the caller's context: Redis too slow for the 2 s is an outage
}

// Get looks code up. An entry is never a Hit past its expiry, nor near it (SkewMargin), nor when
// it was written to another incarnation of the server (invariants 4 and 5).
func (c *Cache) Get(ctx context.Context, code string, now time.Time) Lookup {
	key := c.Key(code)
	raw, err := c.rdb.Get(ctx, key).Bytes()
	if err != nil && !errors.Is(err, redis.Nil) {
		c.note(ctx, err)
		return Lookup{}
	}
	c.note(ctx, nil)
	l := Lookup{server: c.serverOf(ctx, key)}
	if len(raw) == 0 {
		return l
	}
	if raw[0] == goneMarker {
		return Lookup{Result: Gone, Reason: string(raw[1:])}
	}
	p, err := decode(raw)
	switch {
	case errors.Is(err, errOldEntry):
		return l
	case err != nil:
		c.logger.WarnContext(ctx, "cache entry unreadable", "err", err)
		return l
	case p.Server == "" || p.Server != l.server:
		return l // from a snapshot or a failover: the marker of a delete may be missing
	}
	return judgeExpiry(p, now, l)
}

// GzipForm returns the gzip form kept beside code's entry and the version of the transcoder that
// made it, or nil. The caller trusts it only for a paste it found live in this cache (a Hit), whose
// checks then hold for the form too.
func (c *Cache) GzipForm(ctx context.Context, code string) ([]byte, string) {
	v, err := c.rdb.Get(ctx, c.gzipKey(code)).Bytes()
	if err != nil {
		if !errors.Is(err, redis.Nil) {
			c.note(ctx, err)
		}
		return nil, ""
	}
	version, form, ok := bytes.Cut(v, []byte(" "))
	if !ok || len(form) == 0 {
		return nil, ""
	}
	return form, string(version)
}

// judgeExpiry decides a trusted entry by its expiry: well past it, Gone; near it, by SkewMargin
// either way, a Miss the database decides; before it, a Hit.
func judgeExpiry(p Paste, now time.Time, miss Lookup) Lookup {
	switch {
	case p.ExpiresAt.IsZero() || now.Add(SkewMargin).Before(p.ExpiresAt):
		return Lookup{Result: Hit, Paste: p, server: miss.server}
	case now.Add(-SkewMargin).Before(p.ExpiresAt):
		return miss
	}
	return Lookup{Result: Gone, Reason: "expired"}
}

// putScript fills an entry unless a delete marker is there: a marker that a delete wrote after
// the filler read the database must win (invariant 5), while an entry another incarnation left
// behind is replaced. One key: the script runs on a cluster too.
var putScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.byte(v, 1) == 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`)

// Put caches p, which the caller read from the database after the Miss l, for at most ttl and
// never into the last SkewMargin before its expiry, and reports whether it did. An entry is stamped
// with the server l saw: if Redis restarted since, the entry is never trusted.
func (c *Cache) Put(ctx context.Context, l Lookup, p Paste, ttl time.Duration, now time.Time) bool {
	if l.Result != Miss || l.server == "" {
		return false // Redis was unreachable, or the lookup found something: nothing to fill
	}
	if ttl = entryTTL(p, ttl, now); ttl < time.Millisecond {
		return false
	}
	p.Server = l.server
	raw, err := encode(p)
	if err != nil {
		c.logger.ErrorContext(ctx, "cache entry not encodable", "err", err)
		return false
	}
	put, err := putScript.Run(ctx, c.rdb, []string{c.Key(p.Code)}, raw, ttl.Milliseconds()).Int()
	c.note(ctx, err)
	return err == nil && put == 1
}

// PutGzipForm keeps gz, the gzip form of p's original bytes made by the transcoder of version
// version (codec.GzipVersion), beside the entry Put wrote for p, for as long as Put keeps it (the
// same ttl), in a key of its own (gzipKey) that only GzipForm reads: Get never fetches its bytes.
// The form is made after its entry, off the read's path (paste.Reader), so a delete's marker may
// replace the entry in between: the form is then never read (GzipForm's caller trusts it only
// beside a Hit) and goes with its ttl.
func (c *Cache) PutGzipForm(ctx context.Context, p Paste, version string, gz []byte, ttl time.Duration, now time.Time) {
	if ttl = entryTTL(p, ttl, now); ttl < time.Millisecond || version == "" || len(gz) == 0 {
		return
	}
	form := append(append(make([]byte, 0, len(version)+1+len(gz)), version+" "...), gz...)
	c.note(ctx, c.rdb.Set(ctx, c.gzipKey(p.Code), form, ttl).Err())
}

// entryTTL is how long p's entry may live from now: at most ttl, and never into the last
// SkewMargin before its expiry.
func entryTTL(p Paste, ttl time.Duration, now time.Time) time.Duration {
	if !p.ExpiresAt.IsZero() {
		ttl = min(ttl, p.ExpiresAt.Sub(now)-SkewMargin)
	}
	return ttl
}

// markGoneFor is how long MarkGone keeps trying. A failure is this client's view of Redis, not
// Redis's state: for up to a second after Redis comes back, go-redis's dial circuit breaker fails
// every command at once with the last dial error (and a command can time out under load) while
// Redis, up again, holds an entry of the paste that another replica wrote (the chaos soak found
// this). Waiting out the breaker's probe turns such a blip into a slower delete. Past markGoneFor
// MarkGone fails, and the delete is answered 503: this replica may be cut off from a Redis that
// other replicas still read, and only the marker keeps them from serving the paste (invariant 5).
const markGoneFor = 3 * time.Second

// MarkGone replaces whatever is cached for code with the marker of a deleted paste, and why. It
// retries for up to markGoneFor, so a delete waits out a Redis this process cannot reach yet.
func (c *Cache) MarkGone(ctx context.Context, code, reason string) error {
	return c.MarkAllGone(ctx, []string{code}, reason)
}

// MarkAllGone is MarkGone for many pastes (an operator's takedown of every paste of some
// content): one pipeline round trip per attempt, whatever their number.
func (c *Cache) MarkAllGone(ctx context.Context, codes []string, reason string) error {
	if len(codes) == 0 {
		return nil
	}
	value := append([]byte{goneMarker}, reason...)
	deadline := time.Now().Add(markGoneFor)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, code := range codes {
				p.Set(ctx, c.Key(code), value, goneTTL)
				p.Del(ctx, c.gzipKey(code)) // never read without the entry; dropped for the memory
			}
			return nil
		})
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
			p.Del(ctx, c.gzipKey(code)) // a key of its own: on a cluster, maybe another slot
		}
		return nil
	})
	return c.note(ctx, err)
}

// note logs when Redis starts or stops failing, once per outage rather than once per request, and
// returns err.
func (c *Cache) note(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return err // the caller gave up (a client hung up): that says nothing about Redis
	}
	if err != nil && c.outage.Failed() {
		c.logger.WarnContext(ctx, "redis unavailable, serving without cache", "err", err)
	}
	if err == nil && c.outage.Succeeded() {
		c.logger.InfoContext(ctx, "redis available again")
	}
	return err
}

// An entry is a version byte, the length of the header, the header, then the content as stored.
// The header is binary (entryHeader): its fields in a fixed order, each string length-prefixed,
// decoded with one allocation for all of its strings. Entries from before version 5 are misses:
// version 1 from before entries were stamped with their server, 2 from before compression (its
// content the original bytes), 3 from before encrypted pastes, whose entry would read as plain text
// without its format, 4 with a JSON header. A reader of an older version finds version 5 an unknown
// format, a miss.
const entryVersion = 5

// errOldEntry says an entry was written in an older format: a miss, not worth a log line.
var errOldEntry = errors.New("entry of an older format")

// Flags of an entry's header: which of its times are set.
const (
	entryCreated = 1 << iota
	entryExpires
)

func encode(p Paste) ([]byte, error) {
	buf := make([]byte, 5, 5+64+len(p.Code)+len(p.ContentHash)+len(p.BlobKey)+len(p.Encoding)+len(p.Title)+
		len(p.Language)+len(p.Filename)+len(p.Encryption)+len(p.Server)+len(p.Content))
	buf[0] = entryVersion
	var flags byte
	if !p.CreatedAt.IsZero() {
		flags |= entryCreated
	}
	if !p.ExpiresAt.IsZero() {
		flags |= entryExpires
	}
	buf = append(buf, flags)
	buf = binary.AppendVarint(buf, p.Size)
	buf = binary.AppendVarint(buf, p.StoredSize)
	buf = binary.AppendVarint(buf, p.CreatedAt.UnixNano())
	buf = binary.AppendVarint(buf, p.ExpiresAt.UnixNano())
	for _, s := range [...]string{p.Code, string(p.ContentHash), p.BlobKey, p.Encoding, p.Title, p.Language,
		p.Filename, p.Encryption, p.Server} {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	n := len(buf) - 5
	if uint64(n) > math.MaxUint32 {
		return nil, errors.New("entry header too long")
	}
	binary.BigEndian.PutUint32(buf[1:5], uint32(n))
	return append(buf, p.Content...), nil
}

func decode(raw []byte) (Paste, error) {
	switch {
	case len(raw) > 0 && raw[0] < entryVersion:
		return Paste{}, errOldEntry
	case len(raw) < 5 || raw[0] != entryVersion:
		return Paste{}, errors.New("unknown entry format")
	}
	n := binary.BigEndian.Uint32(raw[1:5])
	if uint64(len(raw)-5) < uint64(n) {
		return Paste{}, errors.New("truncated entry")
	}
	h := entryHeader{rest: raw[5 : 5+n]}
	p, err := h.paste()
	if err != nil {
		return Paste{}, err
	}
	if rest := raw[5+n:]; len(rest) > 0 {
		p.Content = rest
	}
	return p, nil
}

// entryHeader reads an entry's header, in the order encode writes it.
type entryHeader struct {
	rest []byte
	err  error
}

func (h *entryHeader) paste() (Paste, error) {
	if len(h.rest) == 0 {
		return Paste{}, errors.New("empty entry header")
	}
	// One string holds the whole header: each string field is a piece of it.
	header := string(h.rest)
	at := func() int { return len(header) - len(h.rest) }
	flags := h.rest[0]
	h.rest = h.rest[1:]
	p := Paste{Size: h.varint(), StoredSize: h.varint()}
	created, expires := h.varint(), h.varint()
	if flags&entryCreated != 0 {
		p.CreatedAt = time.Unix(0, created).UTC()
	}
	if flags&entryExpires != 0 {
		p.ExpiresAt = time.Unix(0, expires).UTC()
	}
	var fields [9]string
	for i := range fields {
		n := h.skip()
		fields[i] = header[at()-n : at()]
	}
	if h.err != nil {
		return Paste{}, h.err
	}
	if len(h.rest) != 0 {
		return Paste{}, errors.New("entry header too long")
	}
	p.Code, p.BlobKey, p.Encoding, p.Title, p.Language = fields[0], fields[2], fields[3], fields[4], fields[5]
	p.Filename, p.Encryption, p.Server = fields[6], fields[7], fields[8]
	if fields[1] != "" {
		p.ContentHash = []byte(fields[1])
	}
	return p, nil
}

func (h *entryHeader) varint() int64 {
	v, n := binary.Varint(h.rest)
	if n <= 0 {
		h.fail()
		return 0
	}
	h.rest = h.rest[n:]
	return v
}

// skip passes over a string and returns its length.
func (h *entryHeader) skip() int {
	l, n := binary.Uvarint(h.rest)
	if n <= 0 || uint64(len(h.rest)-n) < l {
		h.fail()
		return 0
	}
	h.rest = h.rest[n+int(l):]
	return int(l)
}

func (h *entryHeader) fail() {
	if h.err == nil {
		h.err = errors.New("truncated entry header")
	}
	h.rest = nil
}
