package paste

import (
	"context"
	"testing"
	"time"
)

func TestSizeClass(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ size, want int }{
		{0, 0}, {1023, 0}, {1024, 1}, {2047, 1}, {2048, 2}, {64 << 10, 7}, {10 << 20, 14}, {1 << 40, uploadClasses - 1},
	} {
		if got := sizeClass(tt.size); got != tt.want {
			t.Errorf("sizeClass(%d) = %d, want %d", tt.size, got, tt.want)
		}
	}
}

func TestUploadTimesKeepTheLatestOfEachSize(t *testing.T) {
	t.Parallel()
	u := newUploadTimes()
	if _, ok := u.draw(100); ok || u.ready(100) {
		t.Fatal("no upload timed, yet something to draw")
	}
	u.record(100, 0)
	if !u.ready(100) || u.ready(1<<20) {
		t.Errorf("ready: %v for its size, %v for another; want true, false", u.ready(100), u.ready(1<<20))
	}
	// Past the ring's size only the latest are kept: 1000 uploads, of which the last uploadRing
	// took 1000-uploadRing ... 999 ns.
	for i := range 1000 {
		u.record(500, time.Duration(i)) // the same class as 100 bytes
	}
	r := u.classes[sizeClass(100)]
	if r.n != uploadRing {
		t.Fatalf("%d times kept, want %d", r.n, uploadRing)
	}
	for _, d := range r.d {
		if d < 1000-uploadRing {
			t.Fatalf("an older time, %v, is still kept", d)
		}
	}
}

// Every kept time is drawn, each about as often: the wait's distribution is the uploads'.
func TestUploadTimesDrawEachEquallyLikely(t *testing.T) {
	t.Parallel()
	u := newUploadTimes()
	next := 0
	u.intN = func(n int) int { next = (next + 1) % n; return next } // every index in turn
	for i := range 16 {
		u.record(100, time.Duration(i+1))
	}
	seen := map[time.Duration]int{}
	for range 10 * 16 {
		d, _ := u.draw(100)
		seen[d]++
	}
	for i := range 16 {
		if n := seen[time.Duration(i+1)]; n != 10 {
			t.Errorf("time %d drawn %d times of %d, want 10", i+1, n, 10*16)
		}
	}
}

// waitAsUpload returns no sooner than the drawn time after start, and at once once that has passed.
func TestWaitAsUpload(t *testing.T) {
	t.Parallel()
	u := newUploadTimes()
	const took = 30 * time.Millisecond
	u.record(100, took)
	start := time.Now()
	u.waitAsUpload(context.Background(), start, 100)
	if waited := time.Since(start); waited < took {
		t.Errorf("returned %v after start, before the drawn %v", waited, took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	u.record(100, time.Hour)
	u.intN = func(int) int { return 1 }  // the hour
	u.waitAsUpload(ctx, time.Now(), 100) // returns: the client is gone
}

// A wait aims early by how late the latest waits resumed (their median), by a quarter of it at most.
func TestUploadTimesAimEarlyByLateness(t *testing.T) {
	t.Parallel()
	u := newUploadTimes()
	if got := u.aim(10 * time.Millisecond); got != 10*time.Millisecond {
		t.Errorf("before any wait: aim %v, want 10ms", got)
	}
	for _, late := range []time.Duration{time.Millisecond, 50 * time.Millisecond, time.Millisecond, 2 * time.Millisecond, 0} {
		u.resumed(late)
	}
	if got := u.aim(10 * time.Millisecond); got != 9*time.Millisecond {
		t.Errorf("latest waits 1ms late in the median: aim %v, want 9ms", got)
	}
	for range uploadRing {
		u.resumed(30 * time.Millisecond) // a busy spell
	}
	if got := u.aim(10 * time.Millisecond); got != 7500*time.Microsecond {
		t.Errorf("waits 30ms late: aim %v, want 7.5ms (a quarter early at most)", got)
	}
}

// The last stretch of a wait sleeps at least its time, in the kernel or, with every kernel sleeper
// taken, on the runtime's timers.
func TestSleepLast(t *testing.T) {
	t.Parallel()
	u := newUploadTimes()
	for range 2 {
		start := time.Now()
		u.sleepLast(3 * time.Millisecond)
		if slept := time.Since(start); slept < 3*time.Millisecond {
			t.Errorf("slept %v, want at least 3ms", slept)
		}
		if len(u.sleepers) != 0 {
			t.Errorf("%d kernel sleepers left after the sleep", len(u.sleepers))
		}
	}
	for range maxKernelSleepers {
		u.sleepers <- struct{}{}
	}
	start := time.Now()
	u.sleepLast(3 * time.Millisecond) // every kernel sleeper taken: it does not wait for one
	if slept := time.Since(start); slept < 3*time.Millisecond {
		t.Errorf("slept %v, want at least 3ms", slept)
	}
}

func TestParseDedupTiming(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]DedupTiming{"": DedupPad, "pad": DedupPad, "off": DedupOff} {
		if got, err := ParseDedupTiming(in); got != want || err != nil {
			t.Errorf("ParseDedupTiming(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseDedupTiming("upload"); err == nil {
		t.Error(`ParseDedupTiming("upload"): no error`)
	}
}
