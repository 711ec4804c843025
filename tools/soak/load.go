package main

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// load is the load generator: goroutines that each do a random mix of creates, reads, burns,
// deletes and metadata reads until the time or the operation budget runs out.
type load struct {
	client     *client
	ledger     *ledger
	pool       contentPool
	stats      *stats
	violations *violations
	clients    int
	maxOps     int64
	seed       uint64
	started    atomic.Int64
}

// run runs the load until stop ends or the budget is spent. Requests use ctx, not stop, so the
// ones in flight when the time is up finish and are judged like any other.
func (l *load) run(ctx, stop context.Context) {
	var wg sync.WaitGroup
	for i := range l.clients {
		r := rand.New(rand.NewPCG(l.seed, uint64(100+i)))
		wg.Go(func() { l.worker(ctx, stop, r) })
	}
	wg.Wait()
}

func (l *load) worker(ctx, stop context.Context, r *rand.Rand) {
	for stop.Err() == nil && l.started.Add(1) <= l.maxOps {
		switch x := r.IntN(100); {
		case x < 30 || l.ledger.len() < 50:
			l.create(ctx, r)
		case x < 70:
			l.read(ctx, r, l.ledger.pick(r, false), true)
		case x < 78:
			l.read(ctx, r, l.ledger.pick(r, true), true)
		case x < 92:
			l.delete(ctx, r)
		default:
			l.read(ctx, r, l.ledger.pick(r, r.IntN(4) == 0), false)
		}
	}
}

func (l *load) create(ctx context.Context, r *rand.Rand) {
	l.stats.creates.Add(1)
	c := newCreateReq(r, l.pool)
	first := time.Now()
	a, lost := l.client.try(ctx, r, c.request)
	if lost && a.err == nil {
		l.stats.createsRetried.Add(1)
	}
	p, outcome, v := judgeCreate(c, a, lost, first)
	l.note(a, v)
	switch outcome {
	case createOK:
		l.stats.created.Add(1)
		l.ledger.add(p)
	case createFailed:
		l.stats.createFailed.Add(1)
	case createUnknown:
		l.stats.createUnknown.Add(1)
	}
}

// read reads p: its bytes (raw: a POST, which takes a burn-after-reading paste) or its metadata.
func (l *load) read(ctx context.Context, r *rand.Rand, p *paste, raw bool) {
	if p == nil {
		return
	}
	switch {
	case !raw:
		l.stats.metas.Add(1)
	case p.burn:
		l.stats.burns.Add(1)
	default:
		l.stats.reads.Add(1)
	}
	path := "/api/v1/pastes/" + p.code
	if raw {
		path = [...]string{"/raw/", "/"}[r.IntN(2)] + p.code
	}
	p.startRead(raw)
	a, lost := l.client.try(ctx, r, p.reader(raw, path))
	l.note(a, p.judgeRead(a, lost, raw))
}

// reader builds the request that reads p at path: a raw read of a burn-after-reading paste is a
// POST, the one request that takes it (README, Create); every other read a GET.
func (p *paste) reader(raw bool, path string) func(ctx context.Context, base string) (*http.Request, error) {
	if raw && p.burn {
		return func(ctx context.Context, base string) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodPost, base+path, nil)
		}
	}
	return get(path)
}

// delete deletes a paste with its owner's token, and now and then deletes it again at once: a
// retried delete must answer 204 again and change nothing.
func (l *load) delete(ctx context.Context, r *rand.Rand) {
	p := l.ledger.pick(r, r.IntN(5) == 0)
	if p == nil {
		return
	}
	for range 1 + r.IntN(3)/2 {
		l.stats.deletes.Add(1)
		p.startDelete()
		a, lost := l.client.try(ctx, r, func(ctx context.Context, base string) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodDelete, base+"/api/v1/pastes/"+p.code, nil)
			if err == nil {
				req.Header.Set("Authorization", "Bearer "+p.token)
			}
			return req, err
		})
		l.note(a, p.judgeDelete(a, lost))
	}
}

// note counts an answer and records its violation, if any. After a 503 (S3 is down) the worker
// pauses a little rather than spin through its budget on answers it already knows.
func (l *load) note(a answer, violation string) {
	if violation != "" {
		l.violations.add("%s", violation)
	}
	switch {
	case a.err != nil:
		l.stats.noAnswer.Add(1)
	case a.status == http.StatusServiceUnavailable:
		l.stats.unavailable.Add(1)
		time.Sleep(20 * time.Millisecond)
	}
}

// get builds a GET of path on whichever process the client picks.
func get(path string) func(ctx context.Context, base string) (*http.Request, error) {
	return func(ctx context.Context, base string) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	}
}
