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
	CreatorKeyID   int64 // the creator key that creates it (checked in the create's transaction, queueCreate); 0 for none
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
// It answers ErrNoContent when the content is not stored yet, ErrBlocked when it is blocked. A look
// outside any transaction tells new content (the usual create) in one round trip; the transaction
// decides for content that was stored or blocked then, and answers ErrNoContent too if the content
// went since. Content that comes between the look and the upload is the concurrent creator's case
// of CreatePasteWithBlob.
func (s *Store) CreatePasteShared(ctx context.Context, p NewPaste) (Paste, error) {
	var known bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM content WHERE content_hash = $1)
		OR EXISTS (SELECT 1 FROM blocked_content WHERE content_hash = $1)`, p.ContentHash).Scan(&known)
	if err != nil {
		return Paste{}, fmt.Errorf("look for stored content: %w", err)
	}
	if !known {
		return Paste{}, ErrNoContent
	}
	return s.createPaste(ctx, p, newContent{
		sql: `UPDATE content SET ref_count = ref_count + 1
		      WHERE content_hash = $1 AND NOT (SELECT blocked FROM guard)
		      RETURNING ` + storedBlobColumns,
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
const storedBlobColumns = `blob_key, coalesce(encoding, '') AS encoding, coalesce(stored_bytes, size_bytes) AS stored`

// CreatePasteWithBlob creates p on content just uploaded under the fresh key blobKey. If a concurrent
// creator stored the same content first, its row wins and blobKey goes to the deletion outbox in the
// same transaction, so the duplicate upload cannot leak.
func (s *Store) CreatePasteWithBlob(ctx context.Context, p NewPaste, blobKey string) (Paste, error) {
	var encoding *string // NULL: the original bytes
	if p.Encoding != "" {
		encoding = &p.Encoding
	}
	return s.createPaste(ctx, p, newContent{
		sql: `INSERT INTO content (content_hash, blob_key, size_bytes, encoding, stored_bytes, ref_count)
		      SELECT $1, $11::text, $12::bigint, $13::text, CASE WHEN $13::text IS NOT NULL THEN $14::bigint END, 1
		      FROM guard WHERE NOT blocked
		      ON CONFLICT (content_hash) DO UPDATE SET ref_count = content.ref_count + 1
		      RETURNING ` + storedBlobColumns,
		also: `, duplicate AS (
		      INSERT INTO blob_deletions (blob_key) SELECT $11 FROM taken WHERE blob_key <> $11
		      ON CONFLICT DO NOTHING)`,
		args: []any{blobKey, p.Size, encoding, p.StoredSize},
	})
}

// newContent is how a create takes its content: sql, a statement that returns the content row's
// storedBlobColumns and nothing when the content is blocked (the CTE guard says), also, more CTEs
// that may read its row (taken), and args, its parameters from $11.
type newContent struct {
	sql, also string
	args      []any
}

// createPaste takes the content (content.sql) and inserts the paste in one transaction, so a
// reference is counted exactly when the paste that holds it exists. Blocked content is refused
// first (ErrBlocked), so such a create writes nothing. The transaction is two round trips: its
// BEGIN, the block lock and one statement that does the rest (queueCreate) sent together, and its
// COMMIT (with an Idempotency-Key, the key's statements before it).
func (s *Store) createPaste(ctx context.Context, p NewPaste, content newContent) (Paste, error) {
	created := Paste{
		ContentHash: p.ContentHash, Size: p.Size, Title: p.Title, Language: p.Language,
		Filename: p.Filename, MaxViews: p.MaxViews, ViewsLeft: p.MaxViews, Encryption: p.Encryption,
		ExpiresAt: p.ExpiresAt,
	}
	for attempt := 0; attempt < 8; attempt++ {
		code, err := newShortCode()
		if err != nil {
			return Paste{}, err
		}
		var b storedBlob
		var createdAt time.Time
		queue := func(batch *pgx.Batch) { queueCreate(batch, p, code, content) }
		read := func(br pgx.BatchResults) (err error) {
			b, createdAt, err = readCreate(br, p.CreatorKeyID != 0)
			return err
		}
		err = s.inBatchTx(ctx, queue, read, func(tx pgx.Tx) error {
			return rememberIdempotency(ctx, tx, p.Idempotency, code)
		})
		created.Code, created.CreatedAt = code, createdAt
		created.BlobKey, created.Encoding, created.StoredSize = b.key, b.encoding, b.size
		if errors.Is(err, errCodeConflict) {
			continue // the code is taken, by a paste or a tombstone: draw another, from the start
		}
		if err != nil {
			return Paste{}, err
		}
		return created, nil
	}
	return Paste{}, errCodeConflict
}

// queueCreate queues a create's statements: the content's block lock, taken shared, and the
// creator key's (if any), then one statement that takes the content and inserts the paste under
// code (createStatement). The locks come first, in statements of their own: the statement after
// them sees, in its own snapshot, any block or revocation that committed before they were granted,
// and a block or revocation (or takedown by key) that comes later waits for this transaction, then
// takes its paste down or counts it (a check outside the lock could miss a block that commits
// between the check and the insert, and leave a live paste of blocked content).
func queueCreate(batch *pgx.Batch, p NewPaste, code string, content newContent) {
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
	args := append([]any{p.ContentHash, code, p.OwnerTokenHash, p.Title, p.Language, p.Filename, maxViews, expires,
		encryption, creatorKey}, content.args...)
	batch.Queue(`SELECT pg_advisory_xact_lock_shared($1, $2)`, blockLockClass, blockLockKey(p.ContentHash))
	if creatorKey != nil {
		batch.Queue(`SELECT pg_advisory_xact_lock_shared($1::integer, $2::integer)`, keyLockClass, int32(*creatorKey))
	}
	batch.Queue(createStatement(content), args...)
}

// readCreate reads what queueCreate's statements did: the content taken, and when the paste was
// created. Blocked content answers ErrBlocked, a revoked (or unknown) creator key ErrKeyRevoked;
// content the dedup fast path no longer finds,
// ErrNoContent; a code already given, to a paste or to a tombstone (a code is never given to a
// second paste while its tombstone answers for the first), errCodeConflict. The caller then rolls
// back whatever the statement took.
func readCreate(br pgx.BatchResults, withKey bool) (storedBlob, time.Time, error) {
	if _, err := br.Exec(); err != nil {
		return storedBlob{}, time.Time{}, fmt.Errorf("take the content's block lock: %w", err)
	}
	if withKey {
		if _, err := br.Exec(); err != nil {
			return storedBlob{}, time.Time{}, fmt.Errorf("take the creator key's lock: %w", err)
		}
	}
	var (
		blocked, revoked bool
		key, encoding    *string
		size             *int64
		createdAt        *time.Time
	)
	err := br.QueryRow().Scan(&blocked, &revoked, &key, &encoding, &size, &createdAt)
	switch {
	case err != nil:
		return storedBlob{}, time.Time{}, fmt.Errorf("create paste: %w", err)
	case revoked:
		return storedBlob{}, time.Time{}, ErrKeyRevoked
	case blocked:
		return storedBlob{}, time.Time{}, ErrBlocked
	case key == nil:
		return storedBlob{}, time.Time{}, ErrNoContent // the dedup fast path's content went since it looked
	case createdAt == nil:
		return storedBlob{}, time.Time{}, errCodeConflict
	}
	return storedBlob{key: *key, encoding: *encoding, size: *size}, *createdAt, nil
}

// createStatement is the statement of a create: whether the content is blocked or the creator key
// revoked (guard), the content taken unless either (content.sql, as taken, and content.also), and
// the paste inserted on it. Its parameters: $1 the content hash, $2 the code, $3 to $9 the paste's
// columns, $10 the creator key's id (NULL for none), $11 on content.args. It returns one row:
// whether the content is blocked, whether the key is revoked, the content row's storedBlobColumns
// (NULL when none was taken), and the paste's created_at (NULL when none was inserted).
func createStatement(content newContent) string {
	return `
		WITH checks AS (
			SELECT EXISTS (SELECT 1 FROM blocked_content WHERE content_hash = $1::bytea) AS content_blocked,
			       $10::bigint IS NOT NULL AND NOT EXISTS (
			           SELECT 1 FROM creator_keys WHERE id = $10::bigint AND revoked_at IS NULL) AS key_revoked
		), guard AS (
			SELECT content_blocked OR key_revoked AS blocked FROM checks
		), taken AS (` + content.sql + `)` + content.also + `, inserted AS (
			INSERT INTO pastes (short_code, content_hash, owner_token_hash, title, language, filename,
			                    burn_after_read, max_views, views_left, expires_at, encryption, creator_key_id)
			SELECT $2::text, $1::bytea, $3::bytea, $4::text, $5::text, $6::text, $7::integer IS NOT NULL, $7::integer,
			       $7::integer, $8::timestamptz, $9::text, $10::bigint
			FROM taken
			WHERE NOT EXISTS (SELECT 1 FROM tombstones WHERE short_code = $2)
			ON CONFLICT (short_code) DO NOTHING
			RETURNING created_at
		)
		SELECT checks.content_blocked, checks.key_revoked, taken.blob_key, taken.encoding, taken.stored, inserted.created_at
		FROM checks LEFT JOIN taken ON true LEFT JOIN inserted ON true`
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
	rel, err := tombstone(ctx, tx, []string{code}, [][]byte{hash}, from, reason, perKey)
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
