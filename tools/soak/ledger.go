package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// paste is what the load generator knows of one paste it created, and of what it did to it since.
// Every judgement of an answer about the paste is made under mu, against this record.
type paste struct {
	code, token string
	body        []byte
	burn        bool
	expiresAt   time.Time // zero: never

	mu         sync.Mutex
	deleting   int       // delete requests in flight
	deletedAt  time.Time // when the first 204 to a delete arrived
	deleteLost bool      // a delete's answer was lost: it may have happened
	burning    int       // reads of a burn-after-reading paste in flight
	burnedAt   time.Time // when the read that took the burn paste got its bytes
	burnReads  int       // reads that got the burn paste's bytes: more than one is a violation
	burnLost   bool      // a burn read's answer was lost: it may have taken the paste
}

// ledger is every paste the load created, for picking targets and for the final checks.
type ledger struct {
	mu     sync.Mutex
	pastes []*paste
}

func (l *ledger) add(p *paste) {
	l.mu.Lock()
	l.pastes = append(l.pastes, p)
	l.mu.Unlock()
}

func (l *ledger) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pastes)
}

func (l *ledger) all() []*paste {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*paste(nil), l.pastes...)
}

// pick returns a random paste whose burn flag is burn, most often a recent one: those are still
// alive and cached, while older ones test expiry and tombstones. Nil when none was found.
func (l *ledger) pick(r *rand.Rand, burn bool) *paste {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.pastes)
	for try := 0; try < 8 && n > 0; try++ {
		i := r.IntN(n)
		if r.IntN(100) < 70 {
			i = n - 1 - r.IntN(min(n, 300))
		}
		if p := l.pastes[i]; p.burn == burn {
			return p
		}
	}
	return nil
}

// contentPool holds the bodies that creates share: a few contents referenced by many pastes at
// once, so content rows are shared, freed and stored again all the time (the create/cleanup race
// of docs/design.md, "Create"), beside unique bodies. Some are over the cache's 4KiB size limit, so reads of them
// stream from S3.
type contentPool struct{ shared [][]byte }

func newContentPool(r *rand.Rand, n int) contentPool {
	var c contentPool
	for i := range n {
		size := 20 + r.IntN(2000)
		if i%4 == 0 {
			size = 5000 + r.IntN(8000)
		}
		c.shared = append(c.shared, textBody(fmt.Sprintf("shared content %d", i), size))
	}
	return c
}

// pick returns a shared body four times in five, a unique one otherwise.
func (c contentPool) pick(r *rand.Rand) []byte {
	if r.IntN(5) > 0 {
		return c.shared[r.IntN(len(c.shared))]
	}
	return textBody(fmt.Sprintf("unique content %016x", r.Uint64()), 10+r.IntN(3000))
}

// textBody is printable text of about size bytes starting with head.
func textBody(head string, size int) []byte {
	var b strings.Builder
	for line := 0; b.Len() < size; line++ {
		fmt.Fprintf(&b, "%s, line %d: the quick brown fox jumps over the lazy dog\n", head, line)
	}
	return []byte(b.String())
}

// pickLifetime draws a paste's lifetime in seconds (0: never): mostly a few seconds, so pastes
// expire under load and cleanup always has work, some a minute or so, some long enough to be alive
// at the end, when every one of them must read back.
func pickLifetime(r *rand.Rand) int {
	switch x := r.IntN(100); {
	case x < 75:
		return 1 + r.IntN(maxShortLifetime)
	case x < 88:
		return 30 + r.IntN(60)
	case x < 98:
		return 3600
	default:
		return 0
	}
}

// maxShortLifetime is the longest of the short lifetimes, in seconds: at the end, the soak waits
// this long for them all to expire before it has cleanup finish them.
const maxShortLifetime = 8
