package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// IdempotencyWindow is how long an Idempotency-Key answers its first create again.
const IdempotencyWindow = 24 * time.Hour

// ErrIdempotencyRace says a concurrent request with the same Idempotency-Key committed first; its
// answer is the one to give.
var ErrIdempotencyRace = errors.New("a concurrent request with the same idempotency key won")

// Idempotency ties a create to the client's Idempotency-Key. The key is kept only as a hash; the
// delete token is sealed with a secret derived from the raw key (see the api package).
type Idempotency struct {
	KeyHash     []byte
	Fingerprint []byte // hash of the request, to refuse the same key on a different request
	SealedToken []byte
}

// IdempotentCreate is what an Idempotency-Key remembers of its first create.
type IdempotentCreate struct {
	Fingerprint []byte
	Code        string
	SealedToken []byte
}

// IdempotentCreate returns the create recorded under keyHash within the window, or ErrNotFound.
func (s *Store) IdempotentCreate(ctx context.Context, keyHash []byte) (IdempotentCreate, error) {
	var c IdempotentCreate
	err := s.pool.QueryRow(ctx, `
		SELECT fingerprint, short_code, sealed_token FROM idempotency_keys
		WHERE key_hash = $1 AND created_at > now() - $2::interval`,
		keyHash, IdempotencyWindow).Scan(&c.Fingerprint, &c.Code, &c.SealedToken)
	if errors.Is(err, pgx.ErrNoRows) {
		return IdempotentCreate{}, ErrNotFound
	}
	if err != nil {
		return IdempotentCreate{}, fmt.Errorf("read idempotency key: %w", err)
	}
	return c, nil
}

// rememberIdempotency records the create in the transaction that makes the paste. A key seen before
// (a concurrent retry, or one past the window not purged yet) rolls the whole create back.
func rememberIdempotency(ctx context.Context, tx pgx.Tx, idem *Idempotency, code string) error {
	if idem == nil {
		return nil
	}
	// A row past the window no longer counts: replace it rather than refuse the key forever.
	_, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE key_hash = $1 AND created_at <= now() - $2::interval`,
		idem.KeyHash, IdempotencyWindow)
	if err != nil {
		return fmt.Errorf("expire idempotency key: %w", err)
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO idempotency_keys (key_hash, fingerprint, short_code, sealed_token) VALUES ($1, $2, $3, $4)
		ON CONFLICT (key_hash) DO NOTHING`, idem.KeyHash, idem.Fingerprint, code, idem.SealedToken)
	if err != nil {
		return fmt.Errorf("record idempotency key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrIdempotencyRace
	}
	return nil
}
