package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Paste statuses (docs/design.md, "Data model").
const (
	StatusLive     = "NOT_EXPIRED"
	StatusDeleting = "DELETION_IN_PROGRESS"
	StatusDeleted  = "DELETED"
)

// Reasons a paste became a tombstone.
const (
	ReasonOwner   = "owner"
	ReasonBurned  = "burned"
	ReasonExpired = "expired"
)

// Paste is a live paste as readers see it, with where its bytes are and how they are stored.
type Paste struct {
	Code        string
	ContentHash []byte
	BlobKey     string
	Size        int64 // of the original bytes
	// Encoding is how the blob is stored: "" the original bytes, "zstd" a zstd frame of StoredSize
	// bytes. The codec package reads it.
	Encoding   string
	StoredSize int64
	Title      string
	Language   string
	Filename   string
	// MaxViews is the paste's view limit, 0 for none, and ViewsLeft how many of them are left: a
	// paste with a limit is read only by a POST, which takes one (ConsumeView).
	MaxViews  int
	ViewsLeft int
	// Encryption names the format of an end-to-end encrypted paste's content, as its creator gave
	// it (docs/encryption.md); "" for plain text.
	Encryption string
	CreatedAt  time.Time
	ExpiresAt  time.Time // zero: never expires
}

// ViewLimited reports whether reading p takes one of its views, so that only a POST reads it.
func (p Paste) ViewLimited() bool { return p.MaxViews > 0 }

// BurnAfterRead reports whether p burns after reading: a limit of one view.
func (p Paste) BurnAfterRead() bool { return p.MaxViews == 1 }

// NewPaste is what a creator asks for. The short code is chosen by the store.
type NewPaste struct {
	ContentHash []byte
	Size        int64 // of the original bytes
	// Encoding and StoredSize say how an upload (CreatePasteWithBlob) is stored: "" and Size for
	// the original bytes, "zstd" and the frame's size for a compressed blob.
	Encoding       string
	StoredSize     int64
	OwnerTokenHash []byte
	Title          string
	Language       string
	Filename       string
	MaxViews       int       // 0: no limit; 1: burn after reading
	Encryption     string    // the format of encrypted content; "" for plain text
	ExpiresAt      time.Time // zero: never expires
	Idempotency    *Idempotency
	CreatorKeyID   int64 // the creator key that creates it (checked in the transaction, guardKey); 0 for none
}

// GoneError says why a paste is no longer served. It matches ErrGone.
type GoneError struct {
	Reason string // ReasonOwner, ReasonBurned, ReasonExpired, ReasonTakedown or ReasonLegal
}

func (e *GoneError) Error() string        { return "paste " + e.Reason }
func (e *GoneError) Is(target error) bool { return target == ErrGone }

// HashToken is how owner tokens are stored: a SHA-256, enough for 256-bit random tokens.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// CreatePasteShared is the dedup fast path: if content with p.ContentHash is already stored, one
// transaction takes another reference to it and inserts the paste, with no upload at all.
// It answers ErrNoContent when the content is not stored yet.
func (s *Store) CreatePasteShared(ctx context.Context, p NewPaste) (Paste, error) {
	return s.createPaste(ctx, p, func(tx pgx.Tx) (storedBlob, error) {
		var b storedBlob
		err := tx.QueryRow(ctx,
			`UPDATE content SET ref_count = ref_count + 1 WHERE content_hash = $1 RETURNING `+storedBlobColumns,
			p.ContentHash).Scan(&b.key, &b.encoding, &b.size)
		if errors.Is(err, pgx.ErrNoRows) {
			return b, ErrNoContent
		}
		return b, err
	})
}

// storedBlob is where and how a content's bytes are stored, read by storedBlobColumns.
type storedBlob struct {
	key      string
	encoding string
	size     int64
}

// storedBlobColumns read a content row's storedBlob: a NULL encoding is the original bytes,
// as every blob stored before compression is, and then the stored size is the original's.
const storedBlobColumns = `blob_key, coalesce(encoding, ''), coalesce(stored_bytes, size_bytes)`

// CreatePasteWithBlob creates p on content just uploaded under the fresh key blobKey. If a concurrent
// creator stored the same content first, its row wins and blobKey goes to the deletion outbox in the
// same transaction, so the duplicate upload cannot leak.
func (s *Store) CreatePasteWithBlob(ctx context.Context, p NewPaste, blobKey string) (Paste, error) {
	var encoding *string // NULL: the original bytes
	if p.Encoding != "" {
		encoding = &p.Encoding
	}
	return s.createPaste(ctx, p, func(tx pgx.Tx) (storedBlob, error) {
		var b storedBlob
		err := tx.QueryRow(ctx, `
			INSERT INTO content (content_hash, blob_key, size_bytes, encoding, stored_bytes, ref_count)
			VALUES ($1, $2, $3, $4, CASE WHEN $4::text IS NOT NULL THEN $5::bigint END, 1)
			ON CONFLICT (content_hash) DO UPDATE SET ref_count = content.ref_count + 1
			RETURNING `+storedBlobColumns, p.ContentHash, blobKey, p.Size, encoding, p.StoredSize,
		).Scan(&b.key, &b.encoding, &b.size)
		if err != nil || b.key == blobKey {
			return b, err
		}
		_, err = tx.Exec(ctx, `INSERT INTO blob_deletions (blob_key) VALUES ($1) ON CONFLICT DO NOTHING`, blobKey)
		return b, err
	})
}

// createPaste runs takeContent and the paste insert in one transaction, so a reference is counted
// exactly when the paste that holds it exists. Blocked content is refused first (ErrBlocked), so
// such a create writes nothing.
func (s *Store) createPaste(ctx context.Context, p NewPaste, takeContent func(pgx.Tx) (storedBlob, error)) (Paste, error) {
	created := Paste{
		ContentHash: p.ContentHash, Size: p.Size, Title: p.Title, Language: p.Language,
		Filename: p.Filename, MaxViews: p.MaxViews, ViewsLeft: p.MaxViews, Encryption: p.Encryption,
		ExpiresAt: p.ExpiresAt,
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if p.CreatorKeyID != 0 {
			if err := guardKey(ctx, tx, p.CreatorKeyID); err != nil {
				return err
			}
		}
		if err := guardBlocked(ctx, tx, p.ContentHash); err != nil {
			return err
		}
		b, err := takeContent(tx)
		if err != nil {
			return err
		}
		created.BlobKey, created.Encoding, created.StoredSize = b.key, b.encoding, b.size
		created.Code, created.CreatedAt, err = insertPaste(ctx, tx, p)
		if err != nil {
			return err
		}
		return rememberIdempotency(ctx, tx, p.Idempotency, created.Code)
	})
	if err != nil {
		return Paste{}, err
	}
	return created, nil
}

// insertPaste inserts the paste under a fresh random short code, drawing again on a collision with
// a paste or a tombstone: a code is never given to a second paste while its tombstone answers for
// the first.
func insertPaste(ctx context.Context, tx pgx.Tx, p NewPaste) (string, time.Time, error) {
	var expires *time.Time
	if !p.ExpiresAt.IsZero() {
		expires = &p.ExpiresAt
	}
	var maxViews *int
	if p.MaxViews > 0 {
		maxViews = &p.MaxViews
	}
	var encryption *string
	if p.Encryption != "" {
		encryption = &p.Encryption
	}
	var creatorKey *int64
	if p.CreatorKeyID != 0 {
		creatorKey = &p.CreatorKeyID
	}
	for attempt := 0; attempt < 8; attempt++ {
		code, err := newShortCode()
		if err != nil {
			return "", time.Time{}, err
		}
		var createdAt time.Time
		err = tx.QueryRow(ctx, `
			INSERT INTO pastes (short_code, content_hash, owner_token_hash, title, language, filename,
			                    burn_after_read, max_views, views_left, expires_at, encryption, creator_key_id)
			SELECT $1::text, $2::bytea, $3::bytea, $4::text, $5::text, $6::text, $7::integer IS NOT NULL, $7::integer, $7::integer,
			       $8::timestamptz, $9::text, $10::bigint
			WHERE NOT EXISTS (SELECT 1 FROM tombstones WHERE short_code = $1)
			ON CONFLICT (short_code) DO NOTHING
			RETURNING created_at`,
			code, p.ContentHash, p.OwnerTokenHash, p.Title, p.Language, p.Filename, maxViews, expires, encryption, creatorKey,
		).Scan(&createdAt)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // the code is taken: draw another
		}
		return code, createdAt, err
	}
	return "", time.Time{}, errCodeConflict
}

// ShortCodeLength is the length of a paste's short code: 11 characters of base62, about 65 random bits.
const ShortCodeLength = 11

const shortCodeAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newShortCode draws a code from the CSPRNG, rejecting bytes past the largest multiple of 62 so every
// character is equally likely.
func newShortCode() (string, error) {
	code := make([]byte, 0, ShortCodeLength)
	buf := make([]byte, 2*ShortCodeLength)
	for len(code) < ShortCodeLength {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("draw short code: %w", err)
		}
		for _, b := range buf {
			if b < 248 && len(code) < ShortCodeLength { // 248 = 4*62
				code = append(code, shortCodeAlphabet[b%62])
			}
		}
	}
	return string(code), nil
}

// ValidShortCode reports whether code has the shape of a short code, so malformed ones are refused
// before any query.
func ValidShortCode(code string) bool {
	if len(code) != ShortCodeLength {
		return false
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// readPasteSQL reads a paste, or else its tombstone, in one statement, so one snapshot decides:
// a removal committing meanwhile shows either the paste or its tombstone, never neither. LIMIT 1
// stops the append after the first branch that found the code: a live paste's read never looks at
// the tombstones.
const readPasteSQL = `
	(SELECT p.status, NULL AS deleted_reason, coalesce(p.expires_at <= now(), false),
	        p.content_hash, coalesce(c.blob_key, ''), coalesce(c.size_bytes, 0), coalesce(c.encoding, ''),
	        coalesce(c.stored_bytes, c.size_bytes, 0), p.title, p.language,
	        p.filename, ` + viewsColumns + `, coalesce(p.encryption, ''), p.created_at, p.expires_at
	 FROM pastes p LEFT JOIN content c ON c.content_hash = p.content_hash
	 WHERE p.short_code = $1)
	UNION ALL
	(SELECT 'DELETED', deleted_reason, false, NULL, '', 0, '', 0, '', '', '', 0, 0, '', deleted_at, NULL
	 FROM tombstones WHERE short_code = $1)
	LIMIT 1`

// Paste returns the live paste with short code code. It answers ErrNotFound for an unknown code and a
// *GoneError for a tombstone, a paste being cleaned up, or a paste past its expiry that cleanup has
// not reached yet (invariant 4: expiry is decided at read time, not by cleanup).
func (s *Store) Paste(ctx context.Context, code string) (Paste, error) {
	var (
		p              Paste
		status, reason string
		expired        bool
		expires        *time.Time
		reasonPtr      *string
	)
	p.Code = code
	err := s.pool.QueryRow(ctx, readPasteSQL, code).Scan(&status, &reasonPtr, &expired, &p.ContentHash,
		&p.BlobKey, &p.Size, &p.Encoding, &p.StoredSize, &p.Title, &p.Language, &p.Filename, &p.MaxViews,
		&p.ViewsLeft, &p.Encryption, &p.CreatedAt, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return Paste{}, ErrNotFound
	}
	if err != nil {
		return Paste{}, fmt.Errorf("read paste: %w", err)
	}
	if reasonPtr != nil {
		reason = *reasonPtr
	}
	switch {
	case status == StatusDeleted:
		return Paste{}, &GoneError{Reason: reason}
	case status == StatusDeleting || expired:
		return Paste{}, &GoneError{Reason: ReasonExpired}
	}
	if expires != nil {
		p.ExpiresAt = *expires
	}
	return p, nil
}

// DeletePaste tombstones the paste if token is its owner token. Only a row that actually moves from
// NOT_EXPIRED to DELETED releases its content, so a retried delete changes nothing (ref-counting
// seed: the pastes row is the ownership record) and answers nil again. A paste already claimed by
// cleanup also answers nil: cleanup releases it.
func (s *Store) DeletePaste(ctx context.Context, code, token string) (Released, error) {
	var rel Released
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		_, rel, err = removeLive(ctx, tx, code, ReasonOwner, live, func(owner []byte) error {
			if subtle.ConstantTimeCompare(owner, HashToken(token)) != 1 {
				return ErrForbidden
			}
			return nil
		})
		return err
	})
	return rel, err
}

// removeLive is the one way a person removes a paste: its owner's delete and an operator's
// takedown. It locks the paste's row; allowed, unless nil, decides from the owner token's hash
// whether the caller may. A paste in state from is tombstoned with reason and releases its content;
// any other (a tombstone, or for the owner a paste cleanup claimed, which cleanup releases) is left
// as it is. It returns the paste's content hash, nil for a tombstone.
func removeLive(ctx context.Context, tx pgx.Tx, code, reason string, from state, allowed func(owner []byte) error) ([]byte, Released, error) {
	var (
		owner, hash []byte
		status      string
	)
	err := tx.QueryRow(ctx,
		`SELECT owner_token_hash, status, content_hash FROM pastes WHERE short_code = $1 FOR UPDATE`,
		code).Scan(&owner, &status, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		was, err := removedBefore(ctx, tx, code, allowed)
		return nil, Released{Reason: was}, err
	}
	if err != nil {
		return nil, Released{}, err
	}
	if allowed != nil {
		if err := allowed(owner); err != nil {
			return nil, Released{}, err
		}
	}
	if !slices.Contains(from.statuses, status) {
		return hash, Released{}, nil
	}
	rel, err := tombstone(ctx, tx, []string{code}, [][]byte{hash}, from, reason, 0)
	rel.Reason = reason
	return hash, rel, err
}

// removedBefore answers a removal of a paste that has no pastes row: the reason of its tombstone
// when it was removed before (its owner token still decides, through allowed), ErrNotFound when
// nothing is known of it. Looked up after the pastes row's lock was tried: a removal that held it
// has committed by then, and this later statement sees its tombstone.
func removedBefore(ctx context.Context, tx pgx.Tx, code string, allowed func(owner []byte) error) (string, error) {
	var owner []byte
	var reason string
	err := tx.QueryRow(ctx, `SELECT owner_token_hash, deleted_reason FROM tombstones WHERE short_code = $1`,
		code).Scan(&owner, &reason)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", err
	}
	if allowed != nil {
		if err := allowed(owner); err != nil {
			return "", err
		}
	}
	return reason, nil
}
