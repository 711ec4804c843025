package cache

import (
	"context"
	"errors"
	"time"

	"github.com/bsm/redislock"
)

// ErrLockHeld says another worker held the lock for the whole wait.
var ErrLockHeld = errors.New("cleanup lock held by another worker")

// Lock is the Redis lock cleanup workers take around a claim (distributed-workers seed): SET NX
// with a short TTL, released only by its owner. It spreads claims out; correctness never rests on
// it, since a TTL lock can expire under a pause.
type Lock struct {
	locker *redislock.Client
	key    string
	ttl    time.Duration
	wait   time.Duration
}

// NewLock returns the lock named name with the given TTL. Acquire waits up to wait for it.
func (c *Cache) NewLock(name string, ttl, wait time.Duration) *Lock {
	return &Lock{locker: redislock.New(c.rdb), key: c.prefix + "lock:" + name, ttl: ttl, wait: wait}
}

// Acquire takes the lock, retrying with short jittered back-off while another worker holds it. It
// returns the release function, ErrLockHeld if the wait ran out, or Redis's error when Redis cannot
// be reached, in which case the caller goes on without the lock.
func (l *Lock) Acquire(ctx context.Context) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, l.wait)
	defer cancel()
	lock, err := l.locker.Obtain(ctx, l.key, l.ttl, &redislock.Options{
		RetryStrategy: redislock.ExponentialBackoff(time.Millisecond, 20*time.Millisecond),
	})
	if errors.Is(err, redislock.ErrNotObtained) || (err != nil && ctx.Err() != nil) {
		return nil, ErrLockHeld
	}
	if err != nil {
		return nil, err
	}
	return func() {
		// A lock that expired under a pause is released by nobody: Release checks the token.
		_ = lock.Release(context.WithoutCancel(ctx))
	}, nil
}

// Lease is a lock held for as long as a long task runs, such as an orphan sweep over the whole
// bucket: taken without waiting, kept alive every third of its TTL until released, so that a task
// longer than the TTL keeps it and a process that dies loses it within the TTL.
type Lease struct {
	locker *redislock.Client
	key    string
	ttl    time.Duration
}

// NewLease returns the lease named name with the given TTL.
func (c *Cache) NewLease(name string, ttl time.Duration) *Lease {
	return &Lease{locker: redislock.New(c.rdb), key: c.prefix + "lease:" + name, ttl: ttl}
}

// Acquire takes the lease if nobody holds it and keeps it alive until the returned release is
// called. It returns ErrLockHeld when another process holds it, and Redis's error when Redis
// cannot be reached.
func (l *Lease) Acquire(ctx context.Context) (func(), error) {
	lock, err := l.locker.Obtain(ctx, l.key, l.ttl, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return nil, ErrLockHeld
	}
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				// A failed refresh is retried at the next tick; if the lease ran out meanwhile,
				// another process may start the same task, which is safe, only wasteful.
				_ = lock.Refresh(context.WithoutCancel(ctx), l.ttl, nil)
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		_ = lock.Release(context.WithoutCancel(ctx))
	}, nil
}
