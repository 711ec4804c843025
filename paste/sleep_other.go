//go:build !linux

package paste

import "time"

// kernelSleep sleeps d on the runtime's timers: where nanosleep(2) is not at hand, a wait wakes up
// to a millisecond late (see kernelStretch).
func kernelSleep(d time.Duration) { time.Sleep(d) }
