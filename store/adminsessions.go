package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartAdminSession records a console session whose secret hashes to secretHash, for by, valid for
// ttl, with its sign-in in the audit log. Sessions past their expiry go at the same time.
func (s *Store) StartAdminSession(ctx context.Context, secretHash []byte, by Actor, ttl time.Duration) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM admin_sessions WHERE expires_at <= now()`); err != nil {
			return fmt.Errorf("forget expired sessions: %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO admin_sessions (secret_hash, actor, expires_at) VALUES ($1, $2, now() + $3::interval)`,
			secretHash, by.Name, ttl)
		if err != nil {
			return fmt.Errorf("start admin session: %w", err)
		}
		return record(ctx, tx, AuditRecord{Actor: by, Action: ActionSignIn})
	})
}

// AdminSession returns the actor of the unexpired session whose secret hashes to secretHash, or
// ErrNotFound.
func (s *Store) AdminSession(ctx context.Context, secretHash []byte) (string, error) {
	var actor string
	err := s.pool.QueryRow(ctx, `SELECT actor FROM admin_sessions WHERE secret_hash = $1 AND expires_at > now()`,
		secretHash).Scan(&actor)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("read admin session: %w", err)
	}
	return actor, nil
}

// EndAdminSession ends a console session (a sign-out), with its entry in the audit log.
func (s *Store) EndAdminSession(ctx context.Context, secretHash []byte, by Actor) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM admin_sessions WHERE secret_hash = $1`, secretHash); err != nil {
			return fmt.Errorf("end admin session: %w", err)
		}
		return record(ctx, tx, AuditRecord{Actor: by, Action: ActionSignOut})
	})
}
