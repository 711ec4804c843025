package paste

import (
	"syscall"
	"time"
)

// kernelSleep sleeps d in nanosleep(2), which blocks this OS thread and wakes within microseconds.
func kernelSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR { // a signal woke it: sleep what is left
	}
}
