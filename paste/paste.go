// Package paste is the paste flows: create, read, consume a view, delete, take down and block. The
// HTTP API, the pages, the operators' console and the command line all run them from here, so each
// behaviour exists once, and in each flow the order of its steps over the store (PostgreSQL), the
// bucket (S3) and the cache (Redis) is what keeps the invariants (docs/design.md, "Invariants").
// Nothing here knows HTTP: the flows return the errors below, and their callers say them.
package paste

import (
	"errors"
	"fmt"

	"pastebin/store"
)

var (
	// ErrBlobUnavailable wraps the failures of S3 writes and reads: nothing was stored, or the
	// bytes could not be fetched; the client may try again.
	ErrBlobUnavailable = errors.New("blob store unavailable")
	// ErrNothingToConsume says a paste has no views to take: any read shows it, as often as it likes.
	ErrNothingToConsume = errors.New("paste has no view limit")
	// ErrEncrypted says a page cannot show an encrypted paste: only its script can decrypt it.
	ErrEncrypted = errors.New("paste is encrypted end to end")
	// ErrReadByPost says a paste gives its content only to the read that takes a view of it (a
	// POST: Consumer), never to a GET. Reader's Stored and Body answer it as a *ReadByPostError.
	ErrReadByPost = errors.New("paste is read only by a consuming POST")
	// ErrSignalUnavailable wraps the failures of the spam signal's reads from Redis: the hottest
	// contents cannot be listed now; creates go on regardless.
	ErrSignalUnavailable = errors.New("spam signal unavailable")
	// ErrKeyReused says an Idempotency-Key was already used for a different request.
	ErrKeyReused = errors.New("idempotency key reused for a different request")
)

// UnconfirmedError says a removal committed but the cache could not be told: another replica may
// still serve a cached copy (invariant 5), until the same request, sent again, marks the pastes.
type UnconfirmedError struct {
	Takedown bool // an operator's takedown or block; else an owner's delete
	Err      error
}

func (e *UnconfirmedError) Error() string {
	return fmt.Sprintf("removal committed, cache not told: %v", e.Err)
}

func (e *UnconfirmedError) Unwrap() error { return e.Err }

// ReadByPostError is ErrReadByPost for Paste, whose view limit says how its answer names it (burn
// after reading or a view limit).
type ReadByPostError struct{ Paste store.Paste }

func (e *ReadByPostError) Error() string { return ErrReadByPost.Error() }

func (e *ReadByPostError) Is(target error) bool { return target == ErrReadByPost }

// ExpiryError is an expires_in that the expiry policy does not allow; Detail says what would be.
type ExpiryError struct{ Detail string }

func (e *ExpiryError) Error() string { return "invalid expiry: " + e.Detail }
