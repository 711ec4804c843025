package expiry

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"pastebin/blob"
	"pastebin/store"
)

// create makes a paste as the API does (dedup fast path, else upload and insert) and returns its code.
// ups, if not nil, learns when each upload began and when its create returned.
func (e *env) create(ctx context.Context, content string, expiresAt time.Time, ups *uploads) (string, error) {
	h := sha256.Sum256([]byte(content))
	np := store.NewPaste{ContentHash: h[:], Size: int64(len(content)), OwnerTokenHash: store.HashToken("t"), ExpiresAt: expiresAt}
	p, err := e.store.CreatePasteShared(ctx, np)
	if errors.Is(err, store.ErrNoContent) {
		key, _ := blob.NewKey(h[:])
		ups.begin(key)
		defer ups.end(key)
		if err := e.putRetrying(ctx, key, []byte(content)); err != nil {
			return "", err
		}
		p, err = e.store.CreatePasteWithBlob(ctx, np, key)
	}
	return p.Code, err
}

// uploads remembers when each upload's create returned. An upload whose create is still running is
// untracked by design, and an orphan only by the clock once it is older than the grace period: a
// stall of the shared machine must not fail the check, a real orphan must.
type uploads struct {
	mu       sync.Mutex
	returned map[string]time.Time // zero while the create runs
}

func newUploads() *uploads { return &uploads{returned: map[string]time.Time{}} }

func (u *uploads) begin(key string) { u.set(key, time.Time{}) }
func (u *uploads) end(key string)   { u.set(key, time.Now()) }

func (u *uploads) set(key string, t time.Time) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.returned[key] = t
}

// unfinishedAt reports whether key is an upload whose create had not returned by t.
func (u *uploads) unfinishedAt(key string, t time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	r, ok := u.returned[key]
	return ok && (r.IsZero() || r.After(t))
}

// onlyUnfinishedUploads reports whether every problem of rep, a check that began at began, is an
// orphan whose create had not returned by then: one that returned earlier holds a content row or
// an outbox entry before the listing, so it is a real orphan.
func (u *uploads) onlyUnfinishedUploads(rep CheckReport, began time.Time) bool {
	b := rep.Blobs
	if rep.Refs.Wrong+rep.Refs.Unreferenced+b.Missing > 0 || rep.Refs.LiveWithoutContent > 0 ||
		b.Orphans == 0 || b.Orphans != len(b.OrphanKeys) || len(rep.Problems) != 1 {
		return false
	}
	for _, k := range b.OrphanKeys {
		if !u.unfinishedAt(k, began) {
			return false
		}
	}
	return true
}

// putRetrying uploads data under key, again after a failure, as a client whose create failed
// would: versitygw's file backend now and then refuses a put into a folder whose last object it is
// removing at that moment (409 ExistingObjectIsDirectory).
func (e *env) putRetrying(ctx context.Context, key string, data []byte) error {
	var err error
	for range 5 {
		if err = e.bucket.Put(ctx, key, data); err == nil {
			return nil
		}
	}
	return err
}

// load runs creators and deleters on a few hot contents and fresh ones, short-lived pastes, cleanup
// runs and the blob deleter, until stop is set. Operations use their own context, so stopping never
// abandons an upload halfway (which would be a real orphan).
func (e *env) load(stop *atomic.Bool, x *Expirer, ups *uploads) *errgroup.Group {
	ctx := context.Background()
	var g errgroup.Group
	for w := range 6 {
		g.Go(func() error {
			var mine []string
			for i := 0; !stop.Load(); i++ {
				content, expires := fmt.Sprintf("hot %d", i%4), time.Now().Add(time.Hour)
				if i%3 == 0 {
					content, expires = fmt.Sprintf("fresh %d-%d", w, i), time.Now().Add(300*time.Millisecond)
				}
				code, err := e.create(ctx, content, expires, ups)
				if err != nil {
					return fmt.Errorf("create: %w", err)
				}
				if mine = append(mine, code); len(mine) > 3 {
					if _, err := e.store.DeletePaste(ctx, mine[0], "t"); err != nil {
						return fmt.Errorf("delete: %w", err)
					}
					mine = mine[1:]
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		for !stop.Load() {
			if _, err := x.RunOnce(ctx, "test"); err != nil {
				return fmt.Errorf("cleanup: %w", err)
			}
			x.DrainOutbox(ctx)
		}
		return nil
	})
	return &g
}

// TestFsckUnderLoad: fsck runs again and again while pastes are created, shared, deleted, expired,
// cleaned up and their blobs deleted, and never reports a violation that is not there. Then a
// ref_count broken on purpose under the same load is repaired without breaking anything else.
func TestFsckUnderLoad(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.expirer(2, func(c *Config) { c.BatchSize = 50 })
	var stop atomic.Bool
	ups := newUploads()
	g := e.load(&stop, x, ups)
	defer func() { stop.Store(true); _ = g.Wait() }()
	// Short enough that blobs outlive it during the test, so the deleter races the orphan check too.
	// An upload whose create has not returned yet may be older than that on a busy machine: it is
	// excused, and only it.
	const grace = 3 * time.Second
	runs, deadline := 0, time.Now().Add(8*time.Second)
	var cleared, excused int
	for ; time.Now().Before(deadline) || runs < 3; runs++ {
		began := time.Now()
		rep := e.fsck(e.checker(false, grace))
		if !rep.OK && ups.onlyUnfinishedUploads(rep, began) {
			excused += rep.Blobs.Orphans
		} else if !rep.OK {
			t.Fatalf("fsck run %d under load reported %v\n%+v", runs, rep.Problems, summarize(rep))
		}
		cleared += rep.Blobs.Cleared
	}
	t.Logf("%d fsck runs under load; %d suspects cleared on a second look, %d uploads still creating excused", runs, cleared, excused)

	// The load's own "hot 1" pastes may all be deleted at this moment, and their content row with
	// them: a paste of the test's own keeps the row there to break.
	if _, err := e.create(context.Background(), "hot 1", time.Now().Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	tag, err := e.store.Pool().Exec(context.Background(), `UPDATE content SET ref_count = ref_count + 3 WHERE content_hash = $1`, sha("hot 1"))
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("break the hot row: %v, %d rows", err, tag.RowsAffected())
	}
	rep := e.fsck(e.checker(true, grace))
	if !rep.OK || !repaired(rep, sha("hot 1")) {
		t.Errorf("repair under load: %v, repaired %+v; want the hot row repaired", rep.Problems, rep.Refs.Repaired)
	}
	stop.Store(true)
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	x.DrainOutbox(context.Background())
	e.audit().Consistent(t)
	if rep := e.fsck(e.checker(false, grace)); !rep.OK {
		t.Errorf("after the load: %v", rep.Problems)
	}
}

func repaired(rep CheckReport, hash []byte) bool {
	for _, r := range rep.Refs.Repaired {
		if string(r.Hash) == string(hash) {
			return true
		}
	}
	return false
}
