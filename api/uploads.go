package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"pastebin/api/problem"
	"pastebin/api/request"
)

// uploadWait is how long a create waits for an upload slot before it is refused.
const uploadWait = time.Second

// UploadRate is the least a create's body must deliver while it holds an upload slot: Bytes in
// every Window, until it ends. The zero UploadRate asks nothing.
type UploadRate struct {
	Bytes  int64
	Window time.Duration
}

// On reports whether r asks anything of a body.
func (r UploadRate) On() bool { return r.Bytes > 0 && r.Window > 0 }

// uploadSlots bound the creates that read and store a body at once. Each may hold up to the paste
// size limit in memory, so the bound on all of them caps that memory however many clients upload.
// A client's share of them is bounded too, so that one client's stalled uploads never hold every
// slot, and a body that stops arriving gives its slot back (UploadRate) long before the server's
// read timeout.
type uploadSlots struct {
	all       chan struct{} // one token per upload in progress; nil: no bound
	perClient int           // slots one client may hold at once; 0: no share of its own
	minRate   UploadRate
	mu        sync.Mutex
	clients   map[string]*clientSlots // the clients holding or waiting for a slot, by rateKey
}

// clientSlots are one client's share: a token per slot it holds, and how many of its requests hold
// or wait for one, so that the entry is forgotten with the last of them.
type clientSlots struct {
	held chan struct{}
	refs int
}

func newUploadSlots(all, perClient int, minRate UploadRate) *uploadSlots {
	s := &uploadSlots{minRate: minRate, clients: map[string]*clientSlots{}}
	if all > 0 {
		s.all = make(chan struct{}, all)
	}
	if perClient > 0 && (all == 0 || perClient < all) {
		s.perClient = perClient
	}
	return s
}

// The ways a create is refused a slot.
var (
	errClientUploads = errors.New("the client holds its share of the upload slots")
	errAllUploads    = errors.New("every upload slot is taken")
)

// acquire takes a slot of client's share, then one of all, waiting for each until wait fires or
// ctx ends. The release it returns gives both back.
func (s *uploadSlots) acquire(ctx context.Context, client string, wait <-chan time.Time) (func(), error) {
	own := s.join(client)
	if err := take(ctx, own.held, wait, errClientUploads); err != nil {
		s.leave(client, own)
		return nil, err
	}
	if err := take(ctx, s.all, wait, errAllUploads); err != nil {
		give(own.held)
		s.leave(client, own)
		return nil, err
	}
	return func() {
		give(s.all)
		give(own.held)
		s.leave(client, own)
	}, nil
}

// take puts a token in slots (nil: no bound), waiting until wait fires (refused) or ctx ends.
func take(ctx context.Context, slots chan struct{}, wait <-chan time.Time, refused error) error {
	if slots == nil {
		return nil
	}
	select {
	case slots <- struct{}{}:
		return nil
	case <-wait:
		return refused
	case <-ctx.Done():
		return ctx.Err()
	}
}

func give(slots chan struct{}) {
	if slots != nil {
		<-slots
	}
}

func (s *uploadSlots) join(client string) *clientSlots {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[client]
	if c == nil {
		c = &clientSlots{}
		if s.perClient > 0 {
			c.held = make(chan struct{}, s.perClient)
		}
		s.clients[client] = c
	}
	c.refs++
	return c
}

func (s *uploadSlots) leave(client string, c *clientSlots) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.refs--; c.refs == 0 {
		delete(s.clients, client)
	}
}

// inUploadSlot runs next in an upload slot. Over the bound, a create waits up to uploadWait: that
// absorbs a burst of ordinary uploads, which finish in milliseconds, at the cost of a goroutine and
// an unread connection, not of a body in memory. Past the wait it is refused with Retry-After
// rather than queued without end: 429 when its own client holds its share, 503 when every slot is
// taken.
func (l *limits) inUploadSlot(writeError func(http.ResponseWriter, *http.Request, error), next http.Handler) http.Handler {
	if l.uploads.all == nil && l.uploads.perClient == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := time.NewTimer(uploadWait)
		defer wait.Stop()
		release, err := l.uploads.acquire(r.Context(), request.ClientKey(r.Context()), wait.C)
		switch {
		case errors.Is(err, errClientUploads):
			l.refused.WithLabelValues("client_uploads").Inc()
			writeError(w, r, problem.RateLimited.WithDetail(fmt.Sprintf("Too many uploads from your address at once: at most %d. "+
				"Try again when one has finished.", l.uploads.perClient)).WithRetryAfter(time.Second))
			return
		case errors.Is(err, errAllUploads):
			l.refused.WithLabelValues("uploads").Inc()
			writeError(w, r, problem.Busy.WithDetail("Too many uploads are in progress. Try again shortly.").WithRetryAfter(time.Second))
			return
		case err != nil:
			return // the client gave up waiting
		}
		l.inFlight.Inc()
		defer func() {
			l.inFlight.Dec()
			release()
		}()
		if l.uploads.minRate.On() {
			stop := l.cutSlowBody(w, r)
			defer stop()
		}
		next.ServeHTTP(w, r)
	})
}

// cutSlowBody watches r's body while it arrives: when fewer than the minimum upload rate's bytes
// arrived in one of its windows, it ends the connection's reads, so that the read in progress fails
// as at the server's read timeout (408 body-timeout) and the slot is given back. A stalled upload
// would otherwise hold its slot until that timeout, minutes away. Deadlines are only ever brought
// forward, never past the server's own. Once stop has returned, nothing is cut: the connection may
// be reading its next request by then.
func (l *limits) cutSlowBody(w http.ResponseWriter, r *http.Request) (stop func()) {
	body := &countedBody{ReadCloser: r.Body, declared: r.ContentLength}
	r.Body = body
	rc, rate := http.NewResponseController(w), l.uploads.minRate
	var mu sync.Mutex // held while cutting, and by stop
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(rate.Window)
		defer tick.Stop()
		for last := int64(0); ; last = body.n.Load() {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if body.ended.Load() {
				return
			}
			if body.n.Load()-last < rate.Bytes {
				mu.Lock()
				defer mu.Unlock()
				select {
				case <-done:
				default:
					if rc.SetReadDeadline(time.Now()) == nil { // not on a recorder in tests
						l.refused.WithLabelValues("upload_rate").Inc()
					}
				}
				return
			}
		}
	}()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		close(done)
	}
}

// countedBody counts the bytes of a request body as they are read, and notes its end.
type countedBody struct {
	io.ReadCloser
	declared int64 // Content-Length, or -1
	n        atomic.Int64
	ended    atomic.Bool
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	total := b.n.Add(int64(n))
	if err != nil || b.declared >= 0 && total >= b.declared {
		b.ended.Store(true)
	}
	return n, err
}
