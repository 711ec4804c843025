package paste

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pastebin/blob"
	"pastebin/blob/codec"
	"pastebin/cache"
	"pastebin/redact"
	"pastebin/store"
)

// ReadConfig is what reads cache by.
type ReadConfig struct {
	CacheTTL      time.Duration // longest time a paste stays in Redis
	CacheMaxBytes int64         // pastes up to this size are cached with their bytes
	// Filled, when set, is given the forms a read made of a compressed paste as it filled the cache:
	// its original bytes and their gzip form (gzipBehind), for the caller to keep in memory. It is
	// called from a goroutine of its own, after the read has returned.
	Filled func(p store.Paste, original, gzip []byte)
}

// Reader runs the read flow (docs/design.md, "Read"): Redis first, then PostgreSQL, then S3,
// filling the cache on the way.
type Reader struct {
	store   *store.Store
	bucket  *blob.Bucket
	cache   *cache.Cache
	codec   *codec.Codec
	cfg     ReadConfig
	now     func() time.Time
	lookups cacheLookups
	gzips   chan struct{} // a slot for each gzip form made at a time (gzipBehind)
}

// NewReader returns the read flow over s, b and c, decoding with cd, counting its cache lookups in
// reg; now is the clock cached entries' expiries are judged by.
func NewReader(s *store.Store, b *blob.Bucket, c *cache.Cache, cd *codec.Codec, cfg ReadConfig, now func() time.Time, reg prometheus.Registerer) *Reader {
	return &Reader{store: s, bucket: b, cache: c, codec: cd, cfg: cfg, now: now, lookups: newCacheLookups(reg),
		gzips: make(chan struct{}, runtime.GOMAXPROCS(0))}
}

// Found is a live paste a read located, with its stored bytes when the cache had them.
type Found struct {
	Paste  store.Paste
	stored []byte
	lookup cache.Lookup // what the cache answered; a Miss lets Stored fill it
}

// StoredBytes are the paste's bytes as stored (Paste.Encoding) when the cache had them, else nil;
// nil too for a paste that is not OpenToGet, whose bytes only Stored would have, which refuses.
func (f Found) StoredBytes() []byte {
	if !OpenToGet(f.Paste) {
		return nil
	}
	return f.stored
}

// KeptGzip returns the gzip form of the original bytes (codec.Gzip's) that the cache keeps beside
// the entry it found, or nil: for a paste whose stored bytes came from the cache (StoredBytes),
// whose entry's checks hold for the form too. One more round trip to Redis, which a reader pays
// rather than a transcode: only when it has no form of its own.
func (rd *Reader) KeptGzip(ctx context.Context, f Found) []byte {
	if f.StoredBytes() == nil {
		return nil
	}
	gz, version := rd.cache.GzipForm(ctx, f.Paste.Code)
	if version != codec.GzipVersion {
		return nil
	}
	return gz
}

// Find locates a live paste: Redis first, then PostgreSQL, whose status and expiry decide
// store.ErrNotFound or a *store.GoneError. It never touches S3 and never takes a view.
func (rd *Reader) Find(ctx context.Context, code string) (Found, error) {
	if !store.ValidShortCode(code) {
		return Found{}, store.ErrNotFound
	}
	l := rd.cache.Get(ctx, code, rd.now())
	rd.lookups.record(l.Result)
	switch l.Result {
	case cache.Gone:
		return Found{}, &store.GoneError{Reason: l.Reason}
	case cache.Hit:
		return Found{Paste: fromCache(l.Paste), stored: l.Paste.Content, lookup: l}, nil
	}
	p, err := rd.store.Paste(ctx, code)
	return Found{Paste: p, lookup: l}, err
}

// OpenToGet reports whether any read may have p's content, a GET included. A paste whose reads are
// counted (a view limit; burn after reading is one view) gives it only to the consuming POST
// (Consumer), which takes a view: link previews, mail scanners and prefetchers send GETs on their
// own (docs/design.md, "Delete, burn and view"). Every read that is not a POST asks here: raw, the
// page, the haste API, edit as new; so do Stored and Body.
func OpenToGet(p store.Paste) bool { return !p.ViewLimited() }

// Body returns the original bytes of a paste that is OpenToGet, decoding its blob as they are read
// (Stored).
func (rd *Reader) Body(ctx context.Context, f Found) (io.ReadCloser, error) {
	enc, err := codec.ParseEncoding(f.Paste.Encoding)
	if err != nil {
		return nil, err
	}
	stored, err := rd.Stored(ctx, f)
	if err != nil {
		return nil, err
	}
	body, err := rd.codec.NewReader(stored, enc, f.Paste.Size)
	if err != nil {
		stored.Close()
		return nil, err
	}
	return decoded{body, stored}, nil
}

// decoded reads a blob's original bytes and closes the decoder, then the blob.
type decoded struct {
	io.ReadCloser           // the decoder
	blob          io.Closer //
}

func (d decoded) Close() error { return errors.Join(d.ReadCloser.Close(), d.blob.Close()) }

// Stored returns the bytes of a paste that is OpenToGet as they are stored (Paste.Encoding),
// filling the cache on the way: with the bytes for small pastes, with the metadata alone for big
// ones, which are streamed. The cache holds them as S3 does, and beside a compressed paste's, its
// gzip form (gzipBehind). Any other paste answers ErrReadByPost, whatever the caller checked before.
func (rd *Reader) Stored(ctx context.Context, f Found) (io.ReadCloser, error) {
	if !OpenToGet(f.Paste) {
		return nil, &ReadByPostError{Paste: f.Paste}
	}
	if f.stored != nil {
		return io.NopCloser(bytes.NewReader(f.stored)), nil
	}
	if f.Paste.Size > rd.cfg.CacheMaxBytes {
		rd.cache.Put(ctx, f.lookup, toCache(f.Paste, nil), rd.cfg.CacheTTL, rd.now())
		return rd.fetch(ctx, f.Paste)
	}
	data, err := rd.fetchAll(ctx, f.Paste)
	if err != nil {
		return nil, err
	}
	entry := toCache(f.Paste, data)
	cached := rd.cache.Put(ctx, f.lookup, entry, rd.cfg.CacheTTL, rd.now())
	rd.gzipBehind(ctx, f.Paste, entry, data, cached)
	return io.NopCloser(bytes.NewReader(data)), nil
}

// gzipBehind makes the gzip form of a compressed paste whose stored bytes a read just fetched, so
// that every replica answers clients that take gzip but not zstd (Safari, Go's and many other HTTP
// clients) without a transcode of its own: once per fill, rather than on the first such read in
// each replica, whose kept forms a restart loses. The form goes beside the cache's entry (when the
// read wrote one: cached) and to the caller (ReadConfig.Filled). It is made behind the read, in a
// goroutine of its own: a decode and a gzip took a sixth of the time of a paste's first read from
// S3 (docs/performance.md). At most one form per processor is made at a time, and a read that finds
// them all busy makes none: the first gzip read of that paste then transcodes it itself.
func (rd *Reader) gzipBehind(ctx context.Context, p store.Paste, entry cache.Paste, stored []byte, cached bool) {
	if p.Encoding != string(codec.Zstd) || p.Size <= codec.MinGzipSize || (!cached && rd.cfg.Filled == nil) {
		return
	}
	select {
	case rd.gzips <- struct{}{}:
	default:
		return
	}
	ctx, now := context.WithoutCancel(ctx), rd.now()
	go func() {
		defer func() { <-rd.gzips }()
		original, gz := rd.gzipForm(p, stored)
		if gz == nil {
			return
		}
		if cached {
			rd.cache.PutGzipForm(ctx, entry, codec.GzipVersion, gz, rd.cfg.CacheTTL, now)
		}
		if rd.cfg.Filled != nil {
			rd.cfg.Filled(p, original, gz)
		}
	}()
}

// gzipForm is the original bytes of a compressed paste and their gzip form. Nil for a blob that does
// not decode: the read that needs its bytes decodes them itself, and answers the error.
func (rd *Reader) gzipForm(p store.Paste, stored []byte) (original, gz []byte) {
	original, err := rd.decode(stored, p)
	if err != nil {
		return nil, nil
	}
	if gz, err = rd.codec.GzipBytes(original); err != nil {
		return nil, nil
	}
	return original, gz
}

// Bytes is Body read whole, for the reads that need all of a paste at once: a page, a JSON answer.
func (rd *Reader) Bytes(ctx context.Context, f Found) ([]byte, error) {
	body, err := rd.Body(ctx, f)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBlobUnavailable, err)
	}
	return data, nil
}

func (rd *Reader) fetch(ctx context.Context, p store.Paste) (io.ReadCloser, error) {
	rc, err := rd.bucket.Get(ctx, p.BlobKey)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, rd.missingBlob(ctx, p)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBlobUnavailable, err)
	}
	return rc, nil
}

func (rd *Reader) fetchAll(ctx context.Context, p store.Paste) ([]byte, error) {
	rc, err := rd.fetch(ctx, p)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBlobUnavailable, err)
	}
	return data, nil
}

// missingBlob explains a blob that is not in S3. A delete that committed after this read began
// legitimately freed it: the paste is gone. Otherwise invariant 2 is broken, which is worth a loud log.
func (rd *Reader) missingBlob(ctx context.Context, p store.Paste) error {
	if _, err := rd.store.Paste(ctx, p.Code); err != nil {
		return err
	}
	return fmt.Errorf("blob %s of live paste %s (code hash) is missing from the bucket", p.BlobKey, redact.Code(p.Code))
}

func toCache(p store.Paste, content []byte) cache.Paste {
	return cache.Paste{
		Code: p.Code, ContentHash: p.ContentHash, BlobKey: p.BlobKey, Size: p.Size, Encoding: p.Encoding,
		StoredSize: p.StoredSize, Title: p.Title, Language: p.Language, Filename: p.Filename,
		Encryption: p.Encryption, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt, Content: content,
	}
}

func fromCache(c cache.Paste) store.Paste {
	return store.Paste{
		Code: c.Code, ContentHash: c.ContentHash, BlobKey: c.BlobKey, Size: c.Size, Encoding: c.Encoding,
		StoredSize: c.StoredSize, Title: c.Title, Language: c.Language, Filename: c.Filename,
		Encryption: c.Encryption, CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt,
	}
}

// cacheLookups counts the reads' cache lookups by result, for the cache hit ratio: hit (served
// from Redis), gone (a deleted or expired paste's marker), miss (PostgreSQL asked, Redis down
// included).
type cacheLookups struct{ byResult *prometheus.CounterVec }

func newCacheLookups(reg prometheus.Registerer) cacheLookups {
	c := cacheLookups{byResult: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pastebin_cache_lookups_total", Help: "Paste reads' cache lookups by result: hit, gone, miss.",
	}, []string{"result"})}
	for _, r := range []string{"hit", "gone", "miss"} {
		c.byResult.WithLabelValues(r) // every series from the start, so rates and ratios never lack one
	}
	reg.MustRegister(c.byResult)
	return c
}

func (c cacheLookups) record(res cache.Result) {
	switch res {
	case cache.Hit:
		c.byResult.WithLabelValues("hit").Inc()
	case cache.Gone:
		c.byResult.WithLabelValues("gone").Inc()
	default:
		c.byResult.WithLabelValues("miss").Inc()
	}
}

// decode returns the original bytes of p's whole stored blob.
func (rd *Reader) decode(stored []byte, p store.Paste) ([]byte, error) {
	enc, err := codec.ParseEncoding(p.Encoding)
	if err != nil {
		return nil, err
	}
	return rd.codec.Decode(stored, enc, p.Size)
}
