package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartAdminSession records a console session whose secret hashes to secretHash, for by, valid for
// ttl, with its sign-in in the audit log. Sessions past their expiry, or idle for longer than idle,
// go at the same time.
func (s *Store) StartAdminSession(ctx context.Context, secretHash []byte, by Actor, ttl, idle time.Duration) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM admin_sessions WHERE expires_at <= now() OR last_seen_at <= now() - $1::interval`, idle)
		if err != nil {
			return fmt.Errorf("forget ended sessions: %w", err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO admin_sessions (secret_hash, actor, expires_at) VALUES ($1, $2, now() + $3::interval)`,
			secretHash, by.Name, ttl)
		if err != nil {
			return fmt.Errorf("start admin session: %w", err)
		}
		return record(ctx, tx, AuditRecord{Actor: by, Action: ActionSignIn})
	})
}

// AdminSession returns the actor of the session whose secret hashes to secretHash, if it has
// neither expired nor been idle for longer than idle, and marks it seen now; else ErrNotFound.
func (s *Store) AdminSession(ctx context.Context, secretHash []byte, idle time.Duration) (string, error) {
	var actor string
	err := s.pool.QueryRow(ctx, `
		UPDATE admin_sessions SET last_seen_at = now()
		WHERE secret_hash = $1 AND expires_at > now() AND last_seen_at > now() - $2::interval
		RETURNING actor`, secretHash, idle).Scan(&actor)
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
