package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrKeyRevoked says a create's creator key is unknown or revoked: the create wrote nothing.
var ErrKeyRevoked = errors.New("the creator key is unknown or revoked")

// CreatorKey is a creator key as the operators see it: never its secret.
type CreatorKey struct {
	ID         int64      `json:"id"`
	Label      string     `json:"label"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	CreateRate string     `json:"create_rate"`
	Pastes     int64      `json:"pastes"` // the key's pastes not yet removed
	Hash       []byte     `json:"-"`      // the SHA-256 of its secret, as KeyByHash found it
}

// Revoked reports whether the key no longer creates.
func (k CreatorKey) Revoked() bool { return k.RevokedAt != nil }

const creatorKeyColumns = `id, label, created_at, revoked_at, last_used_at, create_rate`

func scanCreatorKey(row pgx.Row, k *CreatorKey) error {
	return row.Scan(&k.ID, &k.Label, &k.CreatedAt, &k.RevokedAt, &k.LastUsedAt, &k.CreateRate)
}

// CreateKey stores a new creator key by the SHA-256 of its secret, and audits it in the same
// transaction.
func (s *Store) CreateKey(ctx context.Context, hash []byte, label, rate string, by Actor) (CreatorKey, error) {
	var k CreatorKey
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := scanCreatorKey(tx.QueryRow(ctx, `
			INSERT INTO creator_keys (key_hash, label, create_rate) VALUES ($1::bytea, $2::text, $3::text)
			RETURNING `+creatorKeyColumns, hash, label, rate), &k)
		if err != nil {
			return fmt.Errorf("create a creator key: %w", err)
		}
		return record(ctx, tx, AuditRecord{Actor: by, Action: ActionKeyCreate,
			Detail: map[string]any{"key": k.ID, "label": label, "create_rate": rate}})
	})
	return k, err
}

// KeyByHash finds the key whose secret hashes to hash (ErrNotFound if none), revoked or not. It
// also notes that the key was used, at most once a minute: the replicas look a key up whenever
// their short cache of it lapses, so last_used_at is right within a minute or so, and no create
// writes the key's row (all of a key's creates would queue on it).
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (CreatorKey, error) {
	var k CreatorKey
	err := s.pool.QueryRow(ctx, `
		WITH used AS (
			UPDATE creator_keys SET last_used_at = now()
			WHERE key_hash = $1::bytea AND revoked_at IS NULL
			  AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
			RETURNING last_used_at
		)
		SELECT id, label, created_at, revoked_at, coalesce((SELECT last_used_at FROM used), last_used_at), create_rate, key_hash
		FROM creator_keys WHERE key_hash = $1::bytea`, hash).
		Scan(&k.ID, &k.Label, &k.CreatedAt, &k.RevokedAt, &k.LastUsedAt, &k.CreateRate, &k.Hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, ErrNotFound
	}
	if err != nil {
		return k, fmt.Errorf("look up a creator key: %w", err)
	}
	return k, nil
}

// CreatorKeys lists every key, newest first, with how many of its pastes are not yet removed.
func (s *Store) CreatorKeys(ctx context.Context) ([]CreatorKey, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+creatorKeyColumns+`,
		       (SELECT count(*) FROM pastes p WHERE p.creator_key_id = k.id)
		FROM creator_keys k ORDER BY created_at DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list creator keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CreatorKey, error) {
		var k CreatorKey
		err := row.Scan(&k.ID, &k.Label, &k.CreatedAt, &k.RevokedAt, &k.LastUsedAt, &k.CreateRate, &k.Pastes)
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("list creator keys: %w", err)
	}
	return keys, nil
}

// CreatorKey is the key id, with its count of pastes (ErrNotFound if there is none).
func (s *Store) CreatorKey(ctx context.Context, id int64) (CreatorKey, error) {
	var k CreatorKey
	err := s.pool.QueryRow(ctx, `
		SELECT `+creatorKeyColumns+`, (SELECT count(*) FROM pastes p WHERE p.creator_key_id = k.id)
		FROM creator_keys k WHERE id = $1::bigint`, id).
		Scan(&k.ID, &k.Label, &k.CreatedAt, &k.RevokedAt, &k.LastUsedAt, &k.CreateRate, &k.Pastes)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, ErrNotFound
	}
	if err != nil {
		return k, fmt.Errorf("find a creator key: %w", err)
	}
	return k, nil
}

// Revocation is what a revocation did.
type Revocation struct {
	Revoked bool  // this call revoked the key; false: it was revoked already
	Pastes  int64 // the key's pastes not yet removed when the revocation committed
}

// RevokeKey revokes the key id (ErrNotFound if there is none); revoking a revoked key changes
// nothing. It first takes the key's lock exclusively, which waits for the creates with the key in
// flight (they hold it shared, see queueCreate): every create commits before the revocation, and is
// counted in Pastes, or sees it and writes nothing. The audit entry is in the same transaction.
func (s *Store) RevokeKey(ctx context.Context, id int64, reason string, by Actor) (Revocation, error) {
	var rev Revocation
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if rev, err = revokeKey(ctx, tx, id); err != nil {
			return err
		}
		return record(ctx, tx, AuditRecord{Actor: by, Action: ActionKeyRevoke, Reason: reason,
			Detail: map[string]any{"key": id, "revoked": rev.Revoked, "pastes": rev.Pastes}})
	})
	return rev, err
}

func revokeKey(ctx context.Context, tx pgx.Tx, id int64) (Revocation, error) {
	var rev Revocation
	if err := lockKey(ctx, tx, id); err != nil {
		return rev, err
	}
	err := tx.QueryRow(ctx, `
		WITH k AS (SELECT id, revoked_at FROM creator_keys WHERE id = $1::bigint),
		revoked AS (UPDATE creator_keys SET revoked_at = now() WHERE id = $1::bigint AND revoked_at IS NULL RETURNING id)
		SELECT EXISTS (SELECT 1 FROM revoked), (SELECT count(*) FROM pastes WHERE creator_key_id = $1::bigint)
		FROM k`, id).Scan(&rev.Revoked, &rev.Pastes)
	if errors.Is(err, pgx.ErrNoRows) {
		return rev, ErrNotFound
	}
	if err != nil {
		return rev, fmt.Errorf("revoke a creator key: %w", err)
	}
	return rev, nil
}

// KeyTakedown is an operator's removal of everything a creator key created.
type KeyTakedown struct {
	ID     int64
	Reason string // why, for the audit log
	Legal  bool   // readers are answered 451
	Revoke bool   // also revoke the key, in the same transaction
}

// KeyTakedownResult is what a takedown by key did.
type KeyTakedownResult struct {
	Revocation          // when KeyTakedown.Revoke
	Released            // the pastes taken down, and the content and blobs freed
	ReportsClosed int64 // open abuse reports of those pastes, closed as actioned
}

// TakeDownKey takes down every paste the key created that is not removed yet, cleanup's claimed
// ones included, by one set-based tombstone: the same transition, release of references, outbox,
// closing of their open abuse reports and audit as any takedown (TakeDown). Like a revocation it holds the key's lock exclusively, so the
// creates with the key in flight commit first and are taken down too; those that start after it
// commits create again, unless Revoke revoked the key. Then it locks the pastes in code order and
// their content after them: the order of every removal (tombstone).
func (s *Store) TakeDownKey(ctx context.Context, t KeyTakedown, by Actor) (KeyTakedownResult, error) {
	var res KeyTakedownResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if t.Revoke {
			res.Revocation, err = revokeKey(ctx, tx, t.ID)
		} else {
			err = lockExistingKey(ctx, tx, t.ID)
		}
		if err != nil {
			return err
		}
		if res.Released, err = takeDownKeyPastes(ctx, tx, t); err != nil {
			return err
		}
		if len(res.Codes) > 0 {
			res.ReportsClosed, err = closeReports(ctx, tx, ReportActioned, TakedownReason(t.Legal), by, res.Codes, nil)
			if err != nil {
				return err
			}
		}
		return record(ctx, tx, AuditRecord{Actor: by, Action: ActionKeyTakedown, Reason: t.Reason,
			Detail: map[string]any{"key": t.ID, "legal": t.Legal, "revoke": t.Revoke, "revoked": res.Revoked,
				"pastes": len(res.Codes), "content_freed": res.FreedContent, "reports_closed": res.ReportsClosed}})
	})
	return res, err
}

func lockExistingKey(ctx context.Context, tx pgx.Tx, id int64) error {
	if err := lockKey(ctx, tx, id); err != nil {
		return err
	}
	var exists bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM creator_keys WHERE id = $1::bigint)`, id).Scan(&exists)
	if err != nil {
		return fmt.Errorf("find a creator key: %w", err)
	}
	if !exists {
		return ErrNotFound
	}
	return nil
}

func takeDownKeyPastes(ctx context.Context, tx pgx.Tx, t KeyTakedown) (Released, error) {
	rows, err := tx.Query(ctx, `
		SELECT short_code, content_hash FROM pastes
		WHERE creator_key_id = $1::bigint AND status IN ('NOT_EXPIRED', 'DELETION_IN_PROGRESS')
		ORDER BY short_code FOR UPDATE`, t.ID)
	if err != nil {
		return Released{}, fmt.Errorf("find the pastes of a creator key: %w", err)
	}
	var codes []string
	var hashes [][]byte
	var code string
	var hash []byte
	_, err = pgx.ForEachRow(rows, []any{&code, &hash}, func() error {
		codes, hashes = append(codes, code), append(hashes, hash)
		return nil
	})
	if err != nil || len(codes) == 0 {
		return Released{}, err
	}
	return tombstone(ctx, tx, codes, hashes, liveOrClaimed, TakedownReason(t.Legal), perKey)
}

// KeyPaste is one paste of a creator key, as the console lists it.
type KeyPaste struct {
	Code      string     `json:"code"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	Size      int64      `json:"size"`
	Title     string     `json:"title"`
}

// KeyPastes lists up to limit of the key's pastes not yet removed, newest first, after the cursor
// (a KeyPastesCursor; "" for the first page). It answers the next page's cursor, "" after the last.
func (s *Store) KeyPastes(ctx context.Context, id int64, cursor string, limit int) ([]KeyPaste, string, error) {
	after, code, err := parseKeyCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT p.short_code, p.created_at, p.expires_at, c.size_bytes, p.title
		FROM pastes p JOIN content c USING (content_hash)
		WHERE p.creator_key_id = $1::bigint AND ($2::timestamptz IS NULL OR (p.created_at, p.short_code) < ($2::timestamptz, $3::text))
		ORDER BY p.created_at DESC, p.short_code DESC LIMIT $4::integer`, id, after, code, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("list a creator key's pastes: %w", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[KeyPaste])
	if err != nil {
		return nil, "", fmt.Errorf("list a creator key's pastes: %w", err)
	}
	next := ""
	if len(list) > limit {
		list = list[:limit]
		last := list[limit-1]
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(last.CreatedAt.UnixMicro(), 10) + "." + last.Code))
	}
	return list, next, nil
}

// ErrBadCursor says a page cursor was not one this store handed out.
var ErrBadCursor = errors.New("not a page cursor of this listing")

func parseKeyCursor(cursor string) (*time.Time, string, error) {
	if cursor == "" {
		return nil, "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	micros, code, ok := strings.Cut(string(raw), ".")
	n, perr := strconv.ParseInt(micros, 10, 64)
	if err != nil || !ok || perr != nil || !ValidShortCode(code) {
		return nil, "", ErrBadCursor
	}
	at := time.UnixMicro(n)
	return &at, code, nil
}

// keyLockClass is the first key of the advisory locks that order a key's creates before its
// revocation and its takedown; the two-key form keeps them apart from every other advisory lock.
const keyLockClass int32 = 0x6b6579 // "key"

// lockKey takes the key's lock exclusively until commit: it waits for the creates with the key in
// flight, and holds off new ones.
func lockKey(ctx context.Context, tx pgx.Tx, id int64) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::integer, $2::integer)`, keyLockClass, int32(id)); err != nil {
		return fmt.Errorf("lock a creator key: %w", err)
	}
	return nil
}
