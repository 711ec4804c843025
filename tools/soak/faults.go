package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// faults is the chaos controller: every few seconds one random fault, each undone after a pause by
// its own goroutine: a serve process SIGKILLed (sometimes just after it was told to start a cleanup
// run) and started again, Redis (or one master of the Redis Cluster) killed or shut down without
// saving and started empty, the S3 server
// killed or stopped and started again on the same data. A process being faulted is not picked
// again until it is back, and a serve process is killed only while another one runs, so one at
// least is up most of the time.
type faults struct {
	c     *cluster
	every time.Duration
	stats *stats
	logf  func(format string, args ...any)
	admin *http.Client

	mu   sync.Mutex
	busy map[*proc]bool // processes a fault holds
	wg   sync.WaitGroup // faults being undone

	timeline *timeline // when serve processes were killed
	graceful bool      // behind the balancer: half the serve faults are SIGTERM restarts
}

// run injects faults until stop ends, then waits until every fault is undone. Restarts use ctx, so
// they finish after stop.
func (f *faults) run(ctx, stop context.Context, r *rand.Rand) {
	for {
		sleep(stop, f.every/2+time.Duration(r.Int64N(int64(f.every))))
		if stop.Err() != nil {
			break
		}
		f.inject(ctx, r)
	}
	f.wg.Wait()
}

// inject picks a fault among those possible now and starts it. A serve kill weighs double: it is
// the fault with the most to recover (claims, uploads, outbox leases, answers lost).
func (f *faults) inject(ctx context.Context, r *rand.Rand) {
	var choices []func()
	if serve := f.killableServe(r); serve >= 0 {
		kill := func() { f.killServe(ctx, r, serve) }
		choices = append(choices, kill, kill)
		if f.graceful {
			choices[len(choices)-1] = func() { f.restartServe(ctx, r, serve) }
		}
	}
	if node := f.freeRedis(r); node >= 0 {
		choices = append(choices, func() { f.stopRedis(ctx, r, node) })
	}
	if f.take(f.c.s3, false) {
		choices = append(choices, func() { f.stopS3(ctx, r) })
	}
	if len(choices) > 0 {
		choices[r.IntN(len(choices))]()
	}
}

// take reports whether p is running and free of faults; with hold, it also holds p for one.
func (f *faults) take(p *proc, hold bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.busy[p] || !p.running() {
		return false
	}
	if hold {
		f.busy[p] = true
	}
	return true
}

// killableServe is a random serve process that may be killed, or -1: at least one other must run.
func (f *faults) killableServe(r *rand.Rand) int {
	var free []int
	up := 0
	f.mu.Lock()
	for i, p := range f.c.serves {
		if p.running() && !f.busy[p] {
			up++
			free = append(free, i)
		}
	}
	f.mu.Unlock()
	if up < 2 {
		return -1
	}
	return free[r.IntN(len(free))]
}

// undo restarts p after down, in the background, and frees it for the next fault.
func (f *faults) undo(ctx context.Context, p *proc, down time.Duration) {
	f.wg.Go(func() {
		sleep(ctx, down)
		failed, err := p.start(ctx, 0)
		f.stats.failedStarts.Add(int64(failed))
		if err != nil && ctx.Err() == nil {
			f.logf("restart of %s failed: %v", p.name, err)
		}
		f.mu.Lock()
		delete(f.busy, p)
		f.mu.Unlock()
	})
}

// killServe SIGKILLs serve process i, half the time just after asking it to start a cleanup run,
// so the kill lands inside one, and starts it again within two seconds.
func (f *faults) killServe(ctx context.Context, r *rand.Rand, i int) {
	p := f.c.serves[i]
	if !f.take(p, true) {
		return
	}
	if r.IntN(2) == 0 && f.startCleanup(ctx, i) == nil {
		f.stats.killsInCleanup.Add(1)
		sleep(ctx, time.Duration(r.IntN(300))*time.Millisecond)
	}
	f.timeline.kill(p)
	f.stats.kills.Add(1)
	f.undo(ctx, p, time.Duration(200+r.IntN(1800))*time.Millisecond)
}

// restartServe stops serve process i with SIGTERM, which must cost no request, and starts it again.
func (f *faults) restartServe(ctx context.Context, r *rand.Rand, i int) {
	p := f.c.serves[i]
	if !f.take(p, true) {
		return
	}
	if !f.timeline.terminate(p) {
		f.logf("%s did not stop within %s of SIGTERM and was killed", p.name, gracefulStop)
		f.stats.kills.Add(1)
	}
	f.stats.restarts.Add(1)
	f.undo(ctx, p, time.Duration(200+r.IntN(1800))*time.Millisecond)
}

// freeRedis is a random Redis node (of one) that runs free of faults, or -1.
func (f *faults) freeRedis(r *rand.Rand) int {
	var free []int
	for i, p := range f.c.redis.nodes {
		if f.take(p, false) {
			free = append(free, i)
		}
	}
	if len(free) == 0 {
		return -1
	}
	return free[r.IntN(len(free))]
}

// stopRedis kills Redis node i or shuts it down without saving: either way it comes back empty. A
// master of a cluster comes back with its slots, from its nodes.conf.
func (f *faults) stopRedis(ctx context.Context, r *rand.Rand, i int) {
	p := f.c.redis.nodes[i]
	if !f.take(p, true) {
		return
	}
	if r.IntN(2) == 0 {
		p.stop(syscall.SIGKILL)
	} else {
		_, _ = redisCommand(ctx, f.c.redis.addrs[i], "SHUTDOWN NOSAVE")
		p.stop(syscall.SIGKILL) // waits for the exit; kills it if the shutdown did not come through
	}
	f.stats.redisStops.Add(1)
	f.undo(ctx, p, time.Duration(500+r.IntN(4000))*time.Millisecond)
}

// stopS3 kills the S3 server or stops it with SIGTERM; it comes back on the same data.
func (f *faults) stopS3(ctx context.Context, r *rand.Rand) {
	p := f.c.s3
	if !f.take(p, true) {
		return
	}
	sig := syscall.SIGKILL
	if r.IntN(2) == 0 {
		sig = syscall.SIGTERM
	}
	p.stop(sig)
	f.stats.s3Stops.Add(1)
	f.undo(ctx, p, time.Duration(500+r.IntN(4000))*time.Millisecond)
}

// startCleanup asks serve process i to start a cleanup run now (POST /admin/cleanup).
func (f *faults) startCleanup(ctx context.Context, i int) error {
	_, err := f.c.startCleanup(ctx, f.admin, i)
	return err
}

// startCleanup asks serve process i to start a cleanup run and returns the run's id (or the id of
// the run already going there).
func (c *cluster) startCleanup(ctx context.Context, hc *http.Client, i int) (int64, error) {
	var run struct {
		ID int64 `json:"id"`
	}
	err := c.admin(ctx, hc, http.MethodPost, i, "/admin/cleanup", http.StatusAccepted, &run)
	if err != nil {
		return 0, fmt.Errorf("start cleanup on %s: %w", c.serves[i].name, err)
	}
	return run.ID, nil
}
