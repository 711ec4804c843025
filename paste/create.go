package paste

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"pastebin/blob"
	"pastebin/blob/codec"
	"pastebin/store"
)

// Input is a create request, whichever way it came in (curl, JSON, the page's form), decoded and
// checked by its caller.
type Input struct {
	Content   []byte
	Hash      []byte // SHA-256 of Content, computed while reading it
	Title     string
	Language  string
	Filename  string
	Burn      bool   // burn after reading: Tidy makes it MaxViews 1
	MaxViews  int    // the paste's view limit, 1 to MaxViews; 0 for none
	ExpiresIn string // as the client wrote it; empty means the policy's default
	// Encryption names the format of an end-to-end encrypted paste's Content (docs/encryption.md),
	// which the server checks for shape only; "" for plain text.
	Encryption string
	// Client is who sent the create (its rate-limit key: an address, or an IPv6 /64), for the spam
	// signal alone, which keeps it only as a keyed hash; "" for none.
	Client string
	// CreatorKey is the secret of the creator key the client sent, if any: required with
	// AccessKeys, checked whenever it is sent, and recorded with the paste.
	CreatorKey string
}

// Created is the answer to a create: the paste and, this once, its delete token.
type Created struct {
	Paste    store.Paste
	Token    string
	Replayed bool // answered from an earlier request with the same Idempotency-Key
}

// TokenLength is the length of an encoded owner token.
const TokenLength = 43

// CreateConfig is what a create decides by.
type CreateConfig struct {
	Expiry      ExpiryPolicy
	DedupTiming DedupTiming // how a create of stored content hides that it was; "": DedupPad
	// Uncompressed stores new content as it is; else it is stored compressed when that makes it
	// smaller (docs/design.md, "Compression at rest"). Reads serve either, whatever it says.
	Uncompressed bool
	// Spam counts each create's client for the spam signal, after the create committed; nil: no signal.
	Spam   *Spam
	Access CreateAccess // "": AccessOpen
	Keys   *Keys        // the creator keys; nil: none is known
}

// Creator runs the create flow (docs/design.md, "Create").
type Creator struct {
	store       *store.Store
	bucket      *blob.Bucket
	codec       *codec.Codec
	cfg         CreateConfig
	now         func() time.Time
	logger      *slog.Logger
	uploadTimes *uploadTimes // the latest uploads' durations, which a create of stored content waits as
}

// NewCreator returns the create flow over s and b, compressing with cd; now is the clock expiries
// count from.
func NewCreator(s *store.Store, b *blob.Bucket, cd *codec.Codec, cfg CreateConfig, now func() time.Time, logger *slog.Logger) *Creator {
	return &Creator{store: s, bucket: b, codec: cd, cfg: cfg, now: now, logger: logger, uploadTimes: newUploadTimes()}
}

// Create stores a paste: the dedup fast path first, with no upload at all; otherwise an upload to a
// fresh key, then the content row and the paste in one transaction. Which of the two it took does
// not show in when it answers (storePaste). A request whose Idempotency-Key was seen before is
// answered as the first time, delete token included.
func (c *Creator) Create(ctx context.Context, in Input, idem IdempotencyKey) (Created, error) {
	keyID, err := c.checkKey(ctx, in.CreatorKey)
	if err != nil {
		return Created{}, err
	}
	lifetime, err := c.cfg.Expiry.Lifetime(in.ExpiresIn)
	if err != nil {
		return Created{}, err
	}
	fp := fingerprint(in, lifetime)
	if !idem.none() {
		if created, err := c.replay(ctx, idem, fp); !errors.Is(err, errNoRecord) {
			return created, err
		}
	}
	np, token, err := c.newPaste(in, lifetime, idem, fp)
	if err != nil {
		return Created{}, err
	}
	np.CreatorKeyID = keyID
	p, err := c.storePaste(ctx, np, in.Content)
	if errors.Is(err, store.ErrIdempotencyRace) {
		return c.replay(ctx, idem, fp)
	}
	if errors.Is(err, store.ErrKeyRevoked) {
		return Created{}, errKeyInvalid // revoked since the cache read it
	}
	if err != nil {
		return Created{}, err
	}
	c.cfg.Spam.Record(ctx, in.Hash, in.Client)
	return Created{Paste: p, Token: token}, nil
}

func (c *Creator) newPaste(in Input, lifetime time.Duration, idem IdempotencyKey, fp []byte) (store.NewPaste, string, error) {
	token, err := newToken()
	if err != nil {
		return store.NewPaste{}, "", err
	}
	np := store.NewPaste{
		ContentHash: in.Hash, Size: int64(len(in.Content)), OwnerTokenHash: store.HashToken(token),
		Title: in.Title, Language: in.Language, Filename: in.Filename, MaxViews: in.MaxViews,
		Encryption: in.Encryption,
	}
	if lifetime > 0 {
		np.ExpiresAt = c.now().Add(lifetime).Truncate(time.Microsecond) // PostgreSQL's precision
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

func (c *Creator) createWithUpload(ctx context.Context, np store.NewPaste, content []byte) (store.Paste, error) {
	key, err := blob.NewKey(np.ContentHash)
	if err != nil {
		return store.Paste{}, err
	}
	stored, enc := content, codec.Identity
	if !c.cfg.Uncompressed {
		stored, enc = c.codec.Compress(content)
	}
	np.Encoding, np.StoredSize = string(enc), int64(len(stored))
	if err := c.bucket.Put(ctx, key, stored); err != nil {
		return store.Paste{}, fmt.Errorf("%w: %w", ErrBlobUnavailable, err)
	}
	p, err := c.store.CreatePasteWithBlob(ctx, np, key)
	if errors.Is(err, store.ErrKeyRevoked) {
		c.dropUpload(ctx, key)
		return p, err
	}
	if err != nil {
		// No content row names the upload, unless the create failed only in our eyes: a client that
		// hangs up during the COMMIT cancels ctx, and the server commits all the same. So the upload
		// is queued held back for the orphan grace period, never due now, rather than left to the
		// orphan sweeper.
		if qerr := c.store.EnqueueAbandonedUploads(context.WithoutCancel(ctx), []string{key}); qerr != nil {
			c.logger.WarnContext(ctx, "abandoned upload left to the orphan sweeper", "blob_key", key, "err", qerr)
		}
	}
	return p, err
}

// checkKey answers the id of the creator key secret, 0 for none, or why the create may not go on:
// first thing, before anything is read or written.
func (c *Creator) checkKey(ctx context.Context, secret string) (int64, error) {
	if secret == "" || c.cfg.Access != AccessKeys && !IsCreatorKey(secret) {
		if c.cfg.Access == AccessKeys {
			return 0, errKeyMissing
		}
		return 0, nil // an open instance's creates took other bearer tokens before keys, and ignore them
	}
	if c.cfg.Keys == nil {
		return 0, errKeyInvalid
	}
	k, err := c.cfg.Keys.Check(ctx, secret)
	return k.ID, err
}

// dropUpload deletes at once the upload of a create that its key's revocation refused: the
// transaction that refused it certainly did not commit (it was refused before any write), so no
// content row names the key, and a refused create leaves nothing behind. Should S3 fail, the
// upload goes to the outbox, held back like any abandoned upload.
func (c *Creator) dropUpload(ctx context.Context, key string) {
	ctx = context.WithoutCancel(ctx)
	if _, err := c.bucket.Delete(ctx, []string{key}); err == nil {
		return
	}
	if err := c.store.EnqueueAbandonedUploads(ctx, []string{key}); err != nil {
		c.logger.WarnContext(ctx, "refused upload left to the orphan sweeper", "blob_key", key, "err", err)
	}
}

// errNoRecord says an Idempotency-Key has not been used yet.
var errNoRecord = errors.New("no idempotency record")

// replay answers a create again from its Idempotency-Key record, delete token included.
func (c *Creator) replay(ctx context.Context, idem IdempotencyKey, fp []byte) (Created, error) {
	rec, err := c.store.IdempotentCreate(ctx, idem.lookupHash())
	if errors.Is(err, store.ErrNotFound) {
		return Created{}, errNoRecord
	}
	if err != nil {
		return Created{}, err
	}
	if !sameFingerprint(rec.Fingerprint, fp) {
		return Created{}, ErrKeyReused
	}
	token, err := idem.open(rec.SealedToken)
	if err != nil {
		return Created{}, fmt.Errorf("open sealed token: %w", err)
	}
	p, err := c.store.Paste(ctx, rec.Code)
	if err != nil {
		return Created{}, err
	}
	return Created{Paste: p, Token: token, Replayed: true}, nil
}

// newToken draws an owner token: 32 random bytes, URL-safe.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("draw token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
