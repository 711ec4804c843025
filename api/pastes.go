package api

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"pastebin/blob"
	"pastebin/cache"
	"pastebin/redact"
	"pastebin/store"
)

// pasteService runs the create, read and delete flows of DESIGN.md over the store, the bucket and
// the cache. Handlers decode and encode; the flows and their ordering live here.
type pasteService struct {
	store   *store.Store
	bucket  *blob.Bucket
	cache   *cache.Cache
	logger  *slog.Logger
	cfg     Config
	now     func() time.Time
	freed   func() // tells the blob deleter that keys wait in the outbox; may be nil
	web     *webUI // the browser pages, which errors are shown as when a browser asks
	limits  *limits
	lookups cacheLookups
	// uploadTimes are the latest uploads' durations, which a create of stored content waits as.
	uploadTimes *uploadTimes
}

// createInput is a decoded create request, whichever way it came in.
type createInput struct {
	content   []byte
	hash      []byte // SHA-256 of content, computed while reading it
	title     string
	language  string
	filename  string
	burn      bool
	expiresIn string // as the client wrote it; empty means the default
}

// createdPaste is the answer to a create: the paste and, this once, its delete token.
type createdPaste struct {
	paste    store.Paste
	token    string
	replayed bool // answered from an earlier request with the same Idempotency-Key
}

// create stores a paste (DESIGN.md, Create): the dedup fast path first, with no upload at all;
// otherwise an upload to a fresh key, then the content row and the paste in one transaction. Which
// of the two it took does not show in when it answers (storePaste).
func (ps *pasteService) create(ctx context.Context, in createInput, idem idempotencyKey) (createdPaste, error) {
	lifetime, err := ps.cfg.Expiry.parseExpiresIn(in.expiresIn)
	if err != nil {
		return createdPaste{}, err
	}
	fp := fingerprint(in, lifetime)
	if !idem.none() {
		if c, err := ps.replay(ctx, idem, fp); !errors.Is(err, errNoRecord) {
			return c, err
		}
	}
	np, token, err := ps.newPaste(in, lifetime, idem, fp)
	if err != nil {
		return createdPaste{}, err
	}
	p, err := ps.storePaste(ctx, np, in.content)
	if errors.Is(err, store.ErrIdempotencyRace) {
		return ps.replay(ctx, idem, fp)
	}
	if err != nil {
		return createdPaste{}, err
	}
	return createdPaste{paste: p, token: token}, nil
}

func (ps *pasteService) newPaste(in createInput, lifetime time.Duration, idem idempotencyKey, fp []byte) (store.NewPaste, string, error) {
	token, err := newToken()
	if err != nil {
		return store.NewPaste{}, "", err
	}
	np := store.NewPaste{
		ContentHash: in.hash, Size: int64(len(in.content)), OwnerTokenHash: store.HashToken(token),
		Title: in.title, Language: in.language, Filename: in.filename, BurnAfterRead: in.burn,
	}
	if lifetime > 0 {
		np.ExpiresAt = ps.now().Add(lifetime).Truncate(time.Microsecond) // PostgreSQL's precision
	}
	if !idem.none() {
		sealed, err := idem.seal(token)
		if err != nil {
			return store.NewPaste{}, "", err
		}
		np.Idempotency = &store.Idempotency{KeyHash: idem.lookupHash(), Fingerprint: fp, SealedToken: sealed}
	}
	return np, token, nil
}

func (ps *pasteService) createWithUpload(ctx context.Context, np store.NewPaste, content []byte) (store.Paste, error) {
	key, err := blob.NewKey(np.ContentHash)
	if err != nil {
		return store.Paste{}, err
	}
	if err := ps.bucket.Put(ctx, key, content); err != nil {
		return store.Paste{}, fmt.Errorf("%w: %w", errBlobUnavailable, err)
	}
	p, err := ps.store.CreatePasteWithBlob(ctx, np, key)
	if err != nil {
		// No content row names the upload, unless the create failed only in our eyes: a client that
		// hangs up during the COMMIT cancels ctx, and the server commits all the same. So the upload
		// is queued held back for the orphan grace period, never due now, rather than left to the
		// orphan sweeper.
		if qerr := ps.store.EnqueueAbandonedUploads(context.WithoutCancel(ctx), []string{key}); qerr != nil {
			ps.logger.WarnContext(ctx, "abandoned upload left to the orphan sweeper", "blob_key", key, "err", qerr)
		}
	}
	return p, err
}

// errNoRecord says an Idempotency-Key has not been used yet.
var errNoRecord = errors.New("no idempotency record")

// replay answers a create again from its Idempotency-Key record, delete token included.
func (ps *pasteService) replay(ctx context.Context, idem idempotencyKey, fp []byte) (createdPaste, error) {
	rec, err := ps.store.IdempotentCreate(ctx, idem.lookupHash())
	if errors.Is(err, store.ErrNotFound) {
		return createdPaste{}, errNoRecord
	}
	if err != nil {
		return createdPaste{}, err
	}
	if !sameFingerprint(rec.Fingerprint, fp) {
		return createdPaste{}, errKeyReused.withDetail("This Idempotency-Key was already used for a different request.")
	}
	token, err := idem.open(rec.SealedToken)
	if err != nil {
		return createdPaste{}, fmt.Errorf("open sealed token: %w", err)
	}
	p, err := ps.store.Paste(ctx, rec.Code)
	if err != nil {
		return createdPaste{}, err
	}
	return createdPaste{paste: p, token: token, replayed: true}, nil
}

// newToken draws an owner token: 32 random bytes, URL-safe.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("draw token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// tokenLength is the length of an encoded owner token.
const tokenLength = 43

// found is a live paste a read located, with its bytes when the cache had them.
type found struct {
	paste   store.Paste
	content []byte
	lookup  cache.Lookup // what the cache answered; a Miss lets body fill it
}

// find locates a live paste: Redis first, then PostgreSQL, whose status and expiry decide 404 or 410.
// It never touches S3 and never burns anything.
func (ps *pasteService) find(ctx context.Context, code string) (found, error) {
	if !store.ValidShortCode(code) {
		return found{}, store.ErrNotFound
	}
	l := ps.cache.Get(ctx, code, ps.now())
	ps.lookups.record(l.Result)
	switch l.Result {
	case cache.Gone:
		return found{}, &store.GoneError{Reason: l.Reason}
	case cache.Hit:
		return found{paste: fromCache(l.Paste), content: l.Paste.Content, lookup: l}, nil
	}
	p, err := ps.store.Paste(ctx, code)
	return found{paste: p, lookup: l}, err
}

// body returns the bytes of a paste that is not burn-after-reading, filling the cache on the way:
// with the bytes for small pastes, with the metadata alone for big ones, which are streamed.
func (ps *pasteService) body(ctx context.Context, f found) (io.ReadCloser, error) {
	if f.content != nil {
		return io.NopCloser(bytes.NewReader(f.content)), nil
	}
	if f.paste.Size > ps.cfg.CacheMaxBytes {
		ps.cache.Put(ctx, f.lookup, toCache(f.paste, nil), ps.cfg.CacheTTL, ps.now())
		return ps.fetch(ctx, f.paste)
	}
	data, err := ps.fetchAll(ctx, f.paste)
	if err != nil {
		return nil, err
	}
	ps.cache.Put(ctx, f.lookup, toCache(f.paste, data), ps.cfg.CacheTTL, ps.now())
	return io.NopCloser(bytes.NewReader(data)), nil
}

// errNothingToConsume says a paste has no views to take: any GET reads it, as often as it likes.
var errNothingToConsume = errors.New("paste does not burn after reading")

// consume takes a view of a paste whose reading takes it, and returns the paste and its bytes. Only
// a POST consumes (README, Create): link previews, mail scanners and prefetchers send GETs on their
// own, and a GET must not take what a person was sent. Burn after reading is one view, so the view
// consume takes is the last, and burn decides which reader gets it.
func (ps *pasteService) consume(ctx context.Context, code string) (store.Paste, []byte, error) {
	f, err := ps.find(ctx, code)
	if err != nil {
		return store.Paste{}, nil, err
	}
	if !f.paste.BurnAfterRead {
		return f.paste, nil, errNothingToConsume
	}
	data, err := ps.burn(ctx, f.paste)
	return f.paste, data, err
}

// burn reads a burn-after-reading paste and takes it. The bytes are fetched first, while the paste
// still holds its content; then the one transaction that moves the paste to DELETED decides which
// reader serves them. Every other reader gets ErrGone.
func (ps *pasteService) burn(ctx context.Context, p store.Paste) ([]byte, error) {
	data, err := ps.fetchAll(ctx, p)
	if err != nil {
		return nil, err
	}
	rel, err := ps.store.BurnPaste(ctx, p.Code)
	if err != nil {
		return nil, err
	}
	// A burn-after-reading paste is never cached (body fills the cache, burns bypass it), so no
	// replica can serve it: a marker that could not be written only costs other readers a query.
	_ = ps.released(ctx, p.Code, store.ReasonBurned, rel)
	return data, nil
}

// delete tombstones the paste for its owner; a retried delete answers nil again and does nothing.
// A client that sent too many wrong tokens is refused before its token is checked.
func (ps *pasteService) delete(ctx context.Context, code, token string) error {
	if !store.ValidShortCode(code) {
		return store.ErrNotFound
	}
	if retry, over := ps.limits.failures.exhausted(ctx); over {
		ps.limits.refused.WithLabelValues("delete_failures").Inc()
		return rateLimited(ps.cfg.DeleteFailureRate, "failed deletes", retry)
	}
	rel, err := ps.store.DeletePaste(ctx, code, token)
	if errors.Is(err, store.ErrForbidden) {
		ps.limits.failures.failed(ctx)
	}
	if err != nil {
		return err
	}
	// A retry marks the paste with the reason it has (an operator's takedown stays one).
	return ps.released(ctx, code, cmp.Or(rel.Reason, store.ReasonOwner), rel)
}

// released runs after a delete committed: the cache replaces the paste with a marker (invariant
// 5), and the blob deleter is told when a blob was freed, so it does not wait for the next cleanup
// run. Without the marker the delete is not confirmed: another replica may still serve a cached
// copy, so the client is told to send it again (a retried delete writes the marker again).
func (ps *pasteService) released(ctx context.Context, code, reason string, rel store.Released) error {
	if len(rel.BlobKeys) > 0 && ps.freed != nil {
		ps.freed()
	}
	if err := ps.cache.MarkGone(context.WithoutCancel(ctx), code, reason); err != nil {
		ps.logger.WarnContext(ctx, "delete committed, cache not told", "err", err)
		return errDeleteUnconfirmed.withDetail("The paste is deleted, but not every server knows yet. " +
			"Send the same request again shortly; it answers 204 once they do.").withRetryAfter(5 * time.Second)
	}
	return nil
}

func (ps *pasteService) fetch(ctx context.Context, p store.Paste) (io.ReadCloser, error) {
	rc, err := ps.bucket.Get(ctx, p.BlobKey)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, ps.missingBlob(ctx, p)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBlobUnavailable, err)
	}
	return rc, nil
}

func (ps *pasteService) fetchAll(ctx context.Context, p store.Paste) ([]byte, error) {
	rc, err := ps.fetch(ctx, p)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBlobUnavailable, err)
	}
	return data, nil
}

// missingBlob explains a blob that is not in S3. A delete that committed after this read began
// legitimately freed it: the paste is gone. Otherwise invariant 2 is broken, which is worth a loud log.
func (ps *pasteService) missingBlob(ctx context.Context, p store.Paste) error {
	if _, err := ps.store.Paste(ctx, p.Code); err != nil {
		return err
	}
	return fmt.Errorf("blob %s of live paste %s (code hash) is missing from the bucket", p.BlobKey, redact.Code(p.Code))
}

func toCache(p store.Paste, content []byte) cache.Paste {
	return cache.Paste{
		Code: p.Code, ContentHash: p.ContentHash, BlobKey: p.BlobKey, Size: p.Size, Title: p.Title,
		Language: p.Language, Filename: p.Filename, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt,
		Content: content,
	}
}

func fromCache(c cache.Paste) store.Paste {
	return store.Paste{
		Code: c.Code, ContentHash: c.ContentHash, BlobKey: c.BlobKey, Size: c.Size, Title: c.Title,
		Language: c.Language, Filename: c.Filename, CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt,
	}
}
