package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestTransient: the errors a finishing transaction may pass are retried; the server's judgement of
// the statement itself, and the caller giving up, are not.
func TestTransient(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return fmt.Errorf("finish: %w", &pgconn.PgError{Code: code}) }
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{pg("40P01"), true}, // deadlock
		{pg("40001"), true}, // serialization failure
		{pg("57P01"), true}, // terminated by an administrator
		{pg("57014"), true}, // statement timeout
		{pg("55P03"), true}, // lock timeout
		{pg("08006"), true}, // connection failure
		{pg("53300"), true}, // too many connections
		{io.ErrUnexpectedEOF, true},
		{context.DeadlineExceeded, true},
		{pg("23514"), false}, // check violation
		{pg("23503"), false}, // foreign key violation
		{pg("42601"), false}, // syntax error
		{fmt.Errorf("claim: %w", context.Canceled), false},
		{nil, false},
	} {
		if got := Transient(tt.err); got != tt.want {
			t.Errorf("Transient(%v) = %t, want %t", tt.err, got, tt.want)
		}
	}
	if err := refCountError(pg("23503")); !errors.Is(err, ErrRefCount) {
		t.Errorf("a foreign key violation is not ErrRefCount: %v", err)
	}
}
