package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"pastebin/blob"
	"pastebin/store"
)

// result is everything measured.
type result struct {
	creates, keyed      int
	workers             int
	createWAL, keyedWAL walCost
	createS3            map[string]int64
	createTime          time.Duration
	live, tombstones    []relSize // sizes with every paste live, and once they are all tombstones
	cleaned             int64
	cleanWAL, vacuumWAL walCost
	cleanS3, cleanRedis map[string]int64
	cleanTime           time.Duration
	purged              int64
	purgeWAL            walCost
	contentRows         int64
}

// measure runs the phases: creates, creates with an Idempotency-Key, sizes, cleanup and the vacuum
// after it, sizes of the tombstones, and their purge. Each phase that writes starts after a
// checkpoint.
func (m *measurement) measure(ctx context.Context) (result, error) {
	r := result{creates: m.cfg.pastes, keyed: m.cfg.keyed, workers: m.cfg.workers}
	contents := &contentPool{shared: m.cfg.shared}
	m.logf("creating %d pastes (%.0f%% on content already stored)", m.cfg.pastes, m.cfg.shared*100)
	start := time.Now()
	var err error
	r.createWAL, err = m.meter.measure(ctx, true, func() error { return m.createAll(ctx, contents, m.cfg.pastes, false) })
	if err != nil {
		return r, err
	}
	r.createTime, r.createS3 = time.Since(start), m.s3.take()
	m.logf("creating %d more with an Idempotency-Key", m.cfg.keyed)
	if r.keyedWAL, err = m.meter.measure(ctx, true, func() error { return m.createAll(ctx, contents, m.cfg.keyed, true) }); err != nil {
		return r, err
	}
	m.s3.take()
	if r.live, err = m.sizes(ctx); err != nil {
		return r, err
	}
	if err := m.count(ctx, `SELECT count(*) FROM content`, &r.contentRows); err != nil {
		return r, err
	}
	if err := m.cleanup(ctx, &r); err != nil {
		return r, err
	}
	if r.tombstones, err = m.sizes(ctx); err != nil {
		return r, err
	}
	return r, m.purge(ctx, &r)
}

// cleanup has the expiry subsystem clean every paste, then vacuums what it left.
func (m *measurement) cleanup(ctx context.Context, r *result) error {
	if _, err := m.store.Pool().Exec(ctx, `ANALYZE`); err != nil {
		return err
	}
	m.logf("cleaning them with %d workers", m.cfg.workers)
	m.redis.take()
	start := time.Now()
	var run store.Run
	var err error
	r.cleanWAL, err = m.meter.measure(ctx, true, func() error {
		run, err = m.expirer.RunOnce(ctx, "cli")
		if err == nil && run.Status != "finished" {
			err = fmt.Errorf("cleanup run %s: %s", run.Status, run.LastError)
		}
		return err
	})
	if err != nil {
		return err
	}
	r.cleanTime, r.cleaned, r.cleanS3, r.cleanRedis = time.Since(start), run.Tombstoned, m.s3.take(), m.redis.take()
	m.logf("vacuuming after the cleanup")
	r.vacuumWAL, err = m.meter.measure(ctx, false, func() error {
		_, err := m.store.Pool().Exec(ctx, `VACUUM pastes, content, tombstones, blob_deletions, blob_deletion_batches`)
		return err
	})
	return err
}

// purge makes every tombstone older than the retention and purges them as the cleanup run does.
func (m *measurement) purge(ctx context.Context, r *result) error {
	if _, err := m.store.Pool().Exec(ctx, `UPDATE tombstones SET deleted_at = deleted_at - interval '400 days'`); err != nil {
		return err
	}
	if _, err := m.store.Pool().Exec(ctx, `VACUUM tombstones`); err != nil {
		return err
	}
	m.logf("purging the tombstones")
	var err error
	r.purgeWAL, err = m.meter.measure(ctx, true, func() error {
		for {
			n, err := m.store.PurgeTombstones(ctx, 365*24*time.Hour, 1000)
			r.purged += n
			if err != nil || n < 1000 {
				return err
			}
		}
	})
	return err
}

// createAll creates n pastes, m.cfg.concurrency at a time, as the API does (create.go): the dedup
// fast path first, else an upload to a fresh key and the content row with the paste. Every paste is
// created already expired, which costs a row the same as any other; keyed ones carry an
// Idempotency-Key record as a client's Idempotency-Key header makes.
func (m *measurement) createAll(ctx context.Context, contents *contentPool, n int, keyed bool) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(m.cfg.concurrency)
	for range n {
		g.Go(func() error { return m.createOne(ctx, contents.pick(), keyed) })
	}
	return g.Wait()
}

func (m *measurement) createOne(ctx context.Context, content []byte, keyed bool) error {
	h := sha256.Sum256(content)
	np := store.NewPaste{ContentHash: h[:], Size: int64(len(content)), OwnerTokenHash: store.HashToken(rand.Text()),
		ExpiresAt: time.Now().Add(-time.Minute)}
	if keyed {
		np.Idempotency = &store.Idempotency{KeyHash: random(32), Fingerprint: random(32), SealedToken: random(12 + 43 + 16)}
	}
	_, err := m.store.CreatePasteShared(ctx, np)
	if !errors.Is(err, store.ErrNoContent) {
		return err
	}
	key, err := blob.NewKey(h[:])
	if err != nil {
		return err
	}
	if err := m.bucket.Put(ctx, key, content); err != nil {
		return err
	}
	_, err = m.store.CreatePasteWithBlob(ctx, np, key)
	return err
}

func (m *measurement) count(ctx context.Context, query string, n *int64) error {
	return m.store.Pool().QueryRow(ctx, query).Scan(n)
}

// contentPool hands out the creates' bodies: with probability shared, one already created (the
// dedup fast path); otherwise new bytes of 100 to 4000 bytes.
type contentPool struct {
	shared float64
	mu     sync.Mutex
	made   [][]byte
}

func (c *contentPool) pick() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.made) > 0 && mrand.Float64() < c.shared {
		return c.made[mrand.IntN(len(c.made))]
	}
	b := []byte(fmt.Sprintf("%s\n%x", rand.Text(), random(50+mrand.IntN(1950))))
	c.made = append(c.made, b)
	return b
}

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
