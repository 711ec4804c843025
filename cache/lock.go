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
