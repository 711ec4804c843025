package main

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// clockMargin is how far apart the soak's reading of the clock and the service's may be around an
// expiry. It is all one machine, so the clock is the same; the margin covers the time between a
// request leaving and the service looking at the clock, and the second-rounding of headers.
const clockMargin = time.Second

// violations collects what the service did that the invariants forbid (docs/design.md, "Invariants").
type violations struct {
	mu    sync.Mutex
	first []string // the first maxViolationDetails, with when they happened
	n     int
}

const maxViolationDetails = 30

func (v *violations) add(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.n++
	if len(v.first) < maxViolationDetails {
		v.first = append(v.first, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
	}
}

func (v *violations) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.n
}

// The answers every route may give without anything being wrong, besides its own success:
//   - 503: the service says S3 is unreachable and nothing was changed (the fault controller stops
//     S3 on purpose);
//   - no answer at all: the process was killed mid-request.
//
// A 500 is always a violation: with PostgreSQL up (the soak never stops it), losing Redis or S3 must
// make the service slower or answer 503, never fail. So are a 404 for a paste the load created
// (tombstones outlive the soak), a 403 to its own token, and any other unexpected status.

// judgeRead checks the answer to a read of p, raw (the bytes, which takes a burn-after-reading
// paste) or of its metadata, and records what it learnt. It returns a violation, or "".
func (p *paste) judgeRead(a answer, lost, raw bool) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if raw && p.burn {
		p.burning--
		p.burnLost = p.burnLost || lost
	}
	switch {
	case a.err != nil || a.status == http.StatusServiceUnavailable:
		return ""
	case a.status == http.StatusOK:
		return p.served(a, raw)
	case a.status == http.StatusGone:
		return p.gone(a)
	}
	return fmt.Sprintf("read of %s answered %d: %s", p.code, a.status, snippet(a.body))
}

// served judges a 200: the paste must still be alive when the read left, and show its own bytes.
func (p *paste) served(a answer, raw bool) string {
	switch {
	case !p.expiresAt.IsZero() && a.sent.After(p.expiresAt.Add(clockMargin)):
		return fmt.Sprintf("expired paste %s served: it expired at %s, the read left at %s (invariant 4)",
			p.code, stamp(p.expiresAt), stamp(a.sent))
	case !p.deletedAt.IsZero() && a.sent.After(p.deletedAt):
		return fmt.Sprintf("deleted paste %s served: its delete answered 204 at %s, the read left at %s (invariant 5)",
			p.code, stamp(p.deletedAt), stamp(a.sent))
	case !p.burnedAt.IsZero() && a.sent.After(p.burnedAt):
		return fmt.Sprintf("burned paste %s served again: a reader took it at %s, this read left at %s",
			p.code, stamp(p.burnedAt), stamp(a.sent))
	case raw && !bytes.Equal(a.body, p.body):
		return fmt.Sprintf("paste %s served %d bytes that are not its content (%d bytes): %s",
			p.code, len(a.body), len(p.body), snippet(a.body))
	}
	if raw && p.burn {
		p.burnReads++
		if p.burnedAt.IsZero() {
			p.burnedAt = a.received
		}
		if p.burnReads > 1 {
			return fmt.Sprintf("burn-after-reading paste %s served %d times", p.code, p.burnReads)
		}
	}
	return ""
}

// gone judges a 410: something must have ended the paste, or may have.
func (p *paste) gone(a answer) string {
	switch {
	case !p.expiresAt.IsZero() && a.received.Add(clockMargin).After(p.expiresAt):
		return ""
	case p.deleting > 0 || !p.deletedAt.IsZero() || p.deleteLost:
		return ""
	case p.burning > 0 || !p.burnedAt.IsZero() || p.burnLost:
		return ""
	}
	expires := "never"
	if !p.expiresAt.IsZero() {
		expires = stamp(p.expiresAt)
	}
	return fmt.Sprintf("live paste %s answered 410 at %s: not deleted, not burned, expires %s: %s",
		p.code, stamp(a.received), expires, snippet(a.body))
}

// judgeDelete checks the answer to the owner's delete of p, and records it.
func (p *paste) judgeDelete(a answer, lost bool) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleting--
	// A 503 (delete-unconfirmed: Redis could not be told) comes after the delete committed.
	p.deleteLost = p.deleteLost || lost || a.status == http.StatusServiceUnavailable
	switch {
	case a.err != nil || a.status == http.StatusServiceUnavailable:
		return ""
	case a.status == http.StatusNoContent:
		if p.deletedAt.IsZero() {
			p.deletedAt = a.received
		}
		return ""
	}
	return fmt.Sprintf("delete of %s with its token answered %d: %s", p.code, a.status, snippet(a.body))
}

// startRead and startDelete note a request about to leave, so a 410 it causes elsewhere is expected.
func (p *paste) startRead(raw bool) {
	if raw && p.burn {
		p.mu.Lock()
		p.burning++
		p.mu.Unlock()
	}
}

func (p *paste) startDelete() {
	p.mu.Lock()
	p.deleting++
	p.mu.Unlock()
}

func stamp(t time.Time) string { return t.Format("15:04:05.000") }

// snippet is the start of a body, for a violation's details.
func snippet(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(bytes.TrimSpace(b))
}
