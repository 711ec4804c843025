package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrRefCount says that releasing content broke one of the guards of ref_count: its CHECK
// (ref_count >= 0: a batch held more references than the row counted) or the foreign key from pastes
// (ON DELETE RESTRICT: the count reached zero while a paste still pointed at the row). Either way some
// content row's ref_count is lower than its pastes, and RepairRefCounts recounts it.
var ErrRefCount = errors.New("a content row's ref_count is lower than its pastes")

// SQLSTATE codes of the guards of ref_count (PostgreSQL, Appendix A).
const (
	checkViolation      = "23514"
	foreignKeyViolation = "23503"
)

// refCountError wraps err in ErrRefCount when PostgreSQL refused it on a guard of ref_count.
func refCountError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == checkViolation || pgErr.Code == foreignKeyViolation) {
		return fmt.Errorf("%w: %w", ErrRefCount, err)
	}
	return err
}

// Transient reports whether err may pass if the same transaction runs again a little later: the
// connection was lost or timed out, the server is restarting or out of connections, or the
// transaction lost a deadlock or a serialization conflict, hit a lock or statement timeout. A
// PostgreSQL error is the server's judgement of the statement, and only those classes pass; any
// other error (a broken connection, a deadline) is the way to the server's, and passes too. A
// cancelled context is the caller giving up, which does not.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true
	}
	switch pgErr.Code[:2] {
	case "08", // connection exception
		"40", // transaction rollback: serialization failure, deadlock
		"53", // insufficient resources: too many connections, out of memory or disk
		"57": // operator intervention: statement timeout, shutdown, cannot connect now
		return true
	}
	return pgErr.Code == "55P03" // lock_not_available: lock_timeout
}
