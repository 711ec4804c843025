package expiry

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"pastebin/blob"
	"pastebin/store"
)

// rangeBounds split the key space into ranges checked side by side: S3 lists a range one page after
// another, so a million blobs in one listing are a thousand round trips in a row. Keys are
// blobs/<two hex digits>/..., spread evenly by the hash; a range is (bound, next bound], and the
// first and last are open, so no key falls between two.
func rangeBounds() []string {
	bounds := []string{""}
	for _, d := range "123456789abcdef" {
		bounds = append(bounds, blob.Prefix+string(d))
	}
	return bounds
}

// errRangeDone stops a range's listing once it has gone past the range.
var errRangeDone = errors.New("listing past the range")

func (c *Checker) checkBlobs(ctx context.Context, rep *CheckReport) error {
	cutoff := time.Now().Add(-c.cfg.OrphanGrace)
	tally := &progressTally{fn: c.cfg.Progress, total: rep.Content}
	tally.add(0)
	ranges := make([]*blobCheck, len(c.bounds))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(listConcurrency)
	for i, lo := range c.bounds {
		hi := ""
		if i+1 < len(c.bounds) {
			hi = c.bounds[i+1]
		}
		ranges[i] = &blobCheck{c: c, lo: lo, cursor: contentCursor{store: c.store, after: lo, upTo: hi}, cutoff: cutoff, tally: tally}
		g.Go(func() error { return ranges[i].run(gctx) })
	}
	err := g.Wait()
	for _, r := range ranges {
		rep.Blobs.merge(r.found)
	}
	tally.add(0)
	return err
}

// blobCheck merges the listing of one key range with the content rows' blob keys in it, both in
// byte order, a page of each at a time, so memory stays flat whatever the number of pastes. A content
// key the listing skipped may be a missing blob, a listed key no content row names may be an orphan.
// Both are only suspects: rows and objects come and go between reading one side and the other, so
// each is looked at again before it is reported. (Were a server to list out of order, the merge
// would only raise more suspects, each cleared by that second look.)
type blobCheck struct {
	c       *Checker
	lo      string
	cursor  contentCursor
	cutoff  time.Time
	tally   *progressTally
	skipped []string // content keys the listing did not have, waiting for a second look
	found   BlobFindings
}

func (bc *blobCheck) run(ctx context.Context) error {
	err := bc.c.blobs.ListAfter(ctx, blob.Prefix, bc.lo, func(objs []blob.Object) error {
		in, past := bc.inRange(objs)
		if err := bc.page(ctx, in); err != nil || past {
			return cmp.Or(err, errRangeDone)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errRangeDone) {
		return err
	}
	return bc.rest(ctx)
}

// rest takes the content keys after the last listed one: the listing had none of them.
func (bc *blobCheck) rest(ctx context.Context) error {
	for {
		k, ok, err := bc.cursor.peek(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return bc.lookAgainAtSkipped(ctx, true)
		}
		bc.cursor.next()
		bc.skip(k)
		if err := bc.lookAgainAtSkipped(ctx, false); err != nil {
			return err
		}
	}
}

// page merges one page of the listing.
func (bc *blobCheck) page(ctx context.Context, objs []blob.Object) error {
	bc.found.Listed += len(objs)
	var unnamed []blob.Object
	for _, o := range objs {
		named, err := bc.mergeUpTo(ctx, o.Key)
		if err != nil {
			return err
		}
		if !named {
			unnamed = append(unnamed, o)
		}
	}
	if err := bc.checkUnnamed(ctx, unnamed); err != nil {
		return err
	}
	return bc.lookAgainAtSkipped(ctx, false)
}

// mergeUpTo moves the content keys up to key: those before it were not listed. It reports whether
// key itself is a content key.
func (bc *blobCheck) mergeUpTo(ctx context.Context, key string) (bool, error) {
	for {
		k, ok, err := bc.cursor.peek(ctx)
		if err != nil || !ok || k > key {
			return false, err
		}
		bc.cursor.next()
		if k == key {
			bc.tally.add(1)
			return true, nil
		}
		bc.skip(k)
	}
}

// inRange returns the objects of a page that are in the range, and whether the page went past it.
// The listing starts after the range's first bound already; a server that ignored StartAfter would
// only cost time.
func (bc *blobCheck) inRange(objs []blob.Object) (in []blob.Object, past bool) {
	for _, o := range objs {
		switch {
		case !bc.cursor.covers(o.Key):
			return in, true
		case o.Key > bc.lo:
			in = append(in, o)
		}
	}
	return in, false
}

func (bc *blobCheck) skip(key string) {
	bc.tally.add(1)
	bc.skipped = append(bc.skipped, key)
}

// lookAgainAtSkipped asks S3 about the content keys the listing did not have, once enough of them
// wait (or at the end), then the database about those S3 does not have. In that order: a key the
// cursor read before its content was freed and its blob deleted is gone from S3 and from content
// by the second look; while a content row still there after the HEAD was there all along (keys are
// never reused), so its blob should have been too.
func (bc *blobCheck) lookAgainAtSkipped(ctx context.Context, final bool) error {
	if len(bc.skipped) == 0 || (!final && len(bc.skipped) < blob.MaxDeleteKeys) {
		return nil
	}
	gone, err := bc.c.absent(ctx, bc.skipped)
	if err != nil {
		return err
	}
	var owners []store.BlobOwner
	if len(gone) > 0 {
		if owners, err = bc.c.store.BlobOwners(ctx, gone); err != nil {
			return err
		}
	}
	b := &bc.found
	b.Cleared += len(bc.skipped) - len(owners)
	b.Missing += len(owners)
	for _, o := range owners {
		b.MissingPastes += o.Live
	}
	b.MissingBlobs = appendUpTo(b.MissingBlobs, owners)
	bc.skipped = bc.skipped[:0]
	return nil
}

// checkUnnamed sorts listed objects no content row had when the cursor read it: tracked since,
// in flight, or orphans. An old one the database does not name is looked at again in S3, since the
// blob deleter may have removed it (and cleared its outbox entry) after the listing. With Repair,
// orphans go to the outbox: the blob deleter removes them, fsck itself deletes nothing.
func (bc *blobCheck) checkUnnamed(ctx context.Context, objs []blob.Object) error {
	old, young, err := untracked(ctx, bc.c.store, objs, bc.cutoff)
	if err != nil {
		return err
	}
	b := &bc.found
	b.InFlight += len(young)
	gone, err := bc.c.absent(ctx, keysOf(old))
	if err != nil {
		return err
	}
	orphans := without(old, gone)
	b.Cleared += len(old) - len(orphans)
	if len(orphans) == 0 {
		return nil
	}
	b.add(orphans)
	keys := keysOf(orphans)
	b.OrphanKeys = appendUpTo(b.OrphanKeys, keys)
	if !bc.c.cfg.Repair {
		return nil
	}
	if err := bc.c.store.EnqueueBlobDeletions(ctx, keys); err != nil {
		return err
	}
	b.Queued += len(keys)
	return nil
}

// absent returns the keys among keys that S3 does not have, asking about each with a HEAD, a few at
// a time. Only suspects come here, so these are few requests, not one per paste.
func (c *Checker) absent(ctx context.Context, keys []string) ([]string, error) {
	exists := make([]bool, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(headConcurrency)
	for i, k := range keys {
		g.Go(func() error {
			var err error
			exists[i], err = c.blobs.Exists(gctx, k)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var gone []string
	for i, k := range keys {
		if !exists[i] {
			gone = append(gone, k)
		}
	}
	return gone, nil
}

func without(objs []blob.Object, keys []string) []blob.Object {
	drop := make(map[string]bool, len(keys))
	for _, k := range keys {
		drop[k] = true
	}
	var out []blob.Object
	for _, o := range objs {
		if !drop[o.Key] {
			out = append(out, o)
		}
	}
	return out
}

// contentCursor walks the content rows' blob keys in (after, upTo] in byte order, a page at a time;
// an empty upTo has no end.
type contentCursor struct {
	store *store.Store
	after string
	upTo  string
	page  []string
	end   bool // the database had no more keys after the last page
}

// peek returns the next key, reading the next page when the current one is used up.
func (cc *contentCursor) peek(ctx context.Context) (string, bool, error) {
	if len(cc.page) == 0 && !cc.end {
		page, err := cc.store.ContentKeysAfter(ctx, cc.after, cursorPage)
		if err != nil {
			return "", false, err
		}
		cc.page, cc.end = page, len(page) < cursorPage
		if len(page) > 0 {
			cc.after = page[len(page)-1]
		}
	}
	if len(cc.page) == 0 || !cc.covers(cc.page[0]) {
		return "", false, nil
	}
	return cc.page[0], true, nil
}

func (cc *contentCursor) next() { cc.page = cc.page[1:] }

func (cc *contentCursor) covers(key string) bool { return cc.upTo == "" || key <= cc.upTo }

// progressTally adds up the content keys the ranges merged and reports them, one call at a time.
type progressTally struct {
	mu      sync.Mutex
	fn      func(checked, total int64)
	checked int64
	total   int64
	last    time.Time
}

func (p *progressTally) add(n int64) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checked += n
	if n == 0 || time.Since(p.last) >= 100*time.Millisecond { // the bar redraws at most 5 times a second anyway
		p.last = time.Now()
		p.fn(p.checked, p.total)
	}
}

func appendUpTo[T any](dst, src []T) []T {
	return append(dst, src[:min(len(src), max(0, maxExamples-len(dst)))]...)
}
