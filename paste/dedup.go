package paste

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"pastebin/store"
)

// DedupTiming is how a create of content that is already stored hides that it was: the dedup fast
// path (docs/design.md, "Create") skips the upload, and would otherwise answer sooner than a create of new
// content, telling its client that someone stored the same bytes before.
type DedupTiming string

const (
	// DedupPad answers a create of stored content no sooner than an upload of its size would have
	// been answered: after a time drawn from the latest uploads of pastes of about its size. Until
	// this process has timed one of those, every create of that size uploads its bytes, stored or
	// not (the create's transaction then finds them stored, takes a reference and queues the
	// duplicate upload for deletion).
	DedupPad DedupTiming = "pad"
	// DedupOff answers at once, without an upload: how fast a create answers tells whether its
	// bytes were stored already.
	DedupOff DedupTiming = "off"
)

// ParseDedupTiming reads a DedupTiming; "" is DedupPad.
func ParseDedupTiming(s string) (DedupTiming, error) {
	switch t := DedupTiming(s); t {
	case "":
		return DedupPad, nil
	case DedupPad, DedupOff:
		return t, nil
	}
	return "", fmt.Errorf("dedup timing %q: want pad or off", s)
}

// storePaste stores np, whose bytes are content, by the dedup fast path or by an upload, so that
// its client cannot tell which by when the answer comes (CreateConfig.DedupTiming). The time an
// upload takes is counted from the same moment as the fast path's, start, so that the fast path's
// wait and a real upload span the same steps.
func (c *Creator) storePaste(ctx context.Context, np store.NewPaste, content []byte) (store.Paste, error) {
	start := time.Now()
	pad := c.cfg.DedupTiming != DedupOff
	if pad && !c.uploadTimes.ready(len(content)) {
		return c.timedUpload(ctx, start, np, content)
	}
	p, err := c.store.CreatePasteShared(ctx, np)
	if errors.Is(err, store.ErrNoContent) {
		return c.timedUpload(ctx, start, np, content)
	}
	if err == nil && pad {
		c.uploadTimes.waitAsUpload(ctx, start, len(content))
	}
	return p, err
}

// timedUpload uploads and creates, and keeps how long that took since start for the fast path to draw.
func (c *Creator) timedUpload(ctx context.Context, start time.Time, np store.NewPaste, content []byte) (store.Paste, error) {
	p, err := c.createWithUpload(ctx, np, content)
	if err == nil {
		c.uploadTimes.record(len(content), time.Since(start))
	}
	return p, err
}

// The upload times kept: the latest uploadRing of each size class.
const (
	uploadClasses = 24 // sizes in powers of two from 1 KiB; the last class holds everything larger
	uploadRing    = 256
)

// uploadTimes keeps how long the latest creates with an upload took, by size class: an upload's
// time grows with its size, so a create of stored content waits as long as uploads of about its
// size took, not of any size.
type uploadTimes struct {
	mu      sync.Mutex
	classes [uploadClasses]timeRing
	intN    func(int) int // rand.IntN; the draw needs no secret, only no bias
	// lates are how much later than asked the latest waits resumed: a timer fires late, and more
	// so on a busy machine. An upload's time includes its own resumptions already, so a wait aims
	// early by their median (robust to the spikes of a busy machine, which a mean would follow
	// until waits aimed so early that they did not wait at all).
	lates timeRing
	// sleepers are the waits sleeping their last stretch in the kernel now (sleepLast).
	sleepers chan struct{}
}

// timeRing is the latest uploadRing durations, the oldest overwritten first.
type timeRing struct {
	d    [uploadRing]time.Duration
	n    int // how many are held, up to uploadRing
	next int // where the next one goes
}

func newUploadTimes() *uploadTimes {
	return &uploadTimes{intN: rand.IntN, sleepers: make(chan struct{}, maxKernelSleepers)}
}

// sizeClass is 0 below 1 KiB, then k for sizes in [2^(k-1), 2^k) KiB.
func sizeClass(size int) int { return min(bits.Len(uint(size)>>10), uploadClasses-1) }

func (u *uploadTimes) record(size int, d time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.classes[sizeClass(size)].add(d)
}

func (r *timeRing) add(d time.Duration) {
	r.d[r.next] = d
	r.next = (r.next + 1) % uploadRing
	r.n = min(r.n+1, uploadRing)
}

// ready reports whether an upload of about size was timed, to draw from. One is enough: a client
// learns whether its bytes were stored from its first create of them alone (later ones are of
// stored bytes anyway), so what a create must not tell apart is one draw from one upload's time;
// and the creates of new content it compares with are timed and kept too.
func (u *uploadTimes) ready(size int) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.classes[sizeClass(size)].n > 0
}

// draw is one of the latest upload times of about size, each as likely; false when none is kept.
func (u *uploadTimes) draw(size int) (time.Duration, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	r := &u.classes[sizeClass(size)]
	if r.n == 0 {
		return 0, false
	}
	return r.d[u.intN(r.n)], true
}

// waitAsUpload returns when a drawn upload time has passed since start, or ctx is done. A create of
// stored content then answers as a create of new content of its size would have, in distribution.
func (u *uploadTimes) waitAsUpload(ctx context.Context, start time.Time, size int) {
	d, ok := u.draw(size)
	if !ok {
		return
	}
	target := u.aim(d)
	left := target - time.Since(start)
	if left <= 0 {
		return
	}
	if coarse := left - kernelStretch; coarse > 0 {
		wait := time.NewTimer(coarse)
		defer wait.Stop()
		select {
		case <-wait.C:
		case <-ctx.Done():
			return
		}
	}
	u.sleepLast(target - time.Since(start))
	u.resumed(time.Since(start) - target)
}

// The last kernelStretch of a wait is slept in the kernel, by at most maxKernelSleepers at once.
// The runtime's timers wake up to a millisecond late (its poller waits in whole milliseconds), by
// how much depending on the wait's fraction of a millisecond: a wait on them alone would answer
// after a time of another shape than an upload's, whose waits for the network wake at once. A
// sleep in the kernel wakes within microseconds, but holds an OS thread while it sleeps; past
// maxKernelSleepers, waits sleep on the runtime's timers rather than take more threads.
const (
	kernelStretch     = 2 * time.Millisecond
	maxKernelSleepers = 16
)

func (u *uploadTimes) sleepLast(d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case u.sleepers <- struct{}{}:
		kernelSleep(d)
		<-u.sleepers
	default:
		time.Sleep(d)
	}
}

// aim is when a wait of d should resume for it to end, with the lateness of waits, at d: earlier by
// the median lateness of the latest waits, but never by more than a quarter of d, so that a busy
// spell cannot make waits short.
func (u *uploadTimes) aim(d time.Duration) time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.lates.n == 0 {
		return d
	}
	held := slices.Sorted(slices.Values(u.lates.d[:u.lates.n]))
	return d - min(held[len(held)/2], d/4)
}

func (u *uploadTimes) resumed(late time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.lates.add(late)
}
